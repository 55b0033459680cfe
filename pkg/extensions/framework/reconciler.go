package framework

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/patch"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
	"github.com/koord-queue/koord-queue/pkg/resources"
)

// Reasons of the events the reconciler records on jobs. A Normal event is a
// write, so there is one only where neither the job nor its unit says the
// same: the unit is found by its name (Integration.UnitName) and owner
// reference, a release is on the unit (phase Dequeued, its Admitted
// condition) and on the job (spec.suspend, koord-queue/released-by, the
// framework's own events, such as the Job controller's Resumed).
const (
	// ReasonStarted: a job released with fewer pods than it asks for
	// (partial admission), which changed its spec.
	ReasonStarted   = "Started"
	ReasonSuspended = "Suspended"
	ReasonRequeued  = "Requeued"
	// ReasonExceedsAdmission: a released job asks for more than its unit
	// was admitted with (excess), naming the pod sets and resources; it is
	// suspended and queued again at its new size.
	ReasonExceedsAdmission = "ExceedsAdmission"
	ReasonUpdatedUnit      = "UpdatedQueueUnit"
	ReasonInvalidJob       = "InvalidJob"
	ReasonNoRequests       = "NoResourceRequests"
	ReasonUnitNameTaken    = "QueueUnitNameTaken"
	// ReasonPodSetUpdatesNotApplied: admission checks sent pod set updates
	// the job cannot take (see missedUpdates); also the reason of the
	// unit's PodSetUpdatesApplied condition then.
	ReasonPodSetUpdatesNotApplied = "PodSetUpdatesNotApplied"
	// ReasonPodSetUpdatesApplied is the reason of a True
	// PodSetUpdatesApplied condition.
	ReasonPodSetUpdatesApplied = "PodSetUpdatesApplied"
	ReasonUnitDeleted          = "QueueUnitDeleted"
	// ReasonSubmittedRunning: a job the queue manages was found running
	// without a unit and was suspended until its unit is admitted.
	ReasonSubmittedRunning = "SubmittedRunning"
	// ReasonOwnerNotAdmitted: a managed job whose owner reference names a
	// job that makes its kind, but whose owner does not cover it (it does
	// not exist, is another object, or is not admitted), was queued by
	// itself.
	ReasonOwnerNotAdmitted = "OwnerNotAdmitted"
)

// FieldOwner names the extensions' writes.
const FieldOwner = client.FieldOwner("koord-queue-controllers")

// JobReconciler keeps one framework's jobs and their QueueUnits in step.
type JobReconciler struct {
	client   client.Client
	reader   client.Reader
	recorder record.EventRecorder
	integ    Integration
	scope    Scope
	clock    clock.PassiveClock

	// statusDelay is how long a unit status change no reader needs at once
	// (queueunit.NeededNow) may wait to go with the next one.
	statusDelay time.Duration
	// deferredSince is when each unit's deferred status change was first
	// seen. It only saves writes: lost on a restart, the change waits once
	// more.
	deferredMu    sync.Mutex
	deferredSince map[client.ObjectKey]time.Time

	// runningTimeout, when positive, is how long a released job may run
	// no pod before its unit backs off (queueunit.BackOff) for backoff.
	runningTimeout, backoff time.Duration

	// priorities is which PriorityClasses give a unit their value.
	priorities PriorityLimit
	// maxExecTime is the most, in seconds, a job's label may declare it
	// runs (declaredRuntime).
	maxExecTime int32
	// slots are the pods let through that the cache does not show yet,
	// shared with the pod webhook.
	slots *SlotExpectations
}

// DefaultStatusDelay is how long a unit's pod counts may lag its job's.
// One second folds the steps of a job's pods starting (created, scheduled,
// running) and stopping into one write or none, and keeps the counts no more
// than a second behind.
const DefaultStatusDelay = time.Second

var _ reconcile.Reconciler = (*JobReconciler)(nil)

// Option configures a JobReconciler.
type Option func(*JobReconciler)

// WithScope sets which jobs the reconciler manages; by default those
// labelled with a quota and submitted suspended.
func WithScope(s Scope) Option {
	return func(r *JobReconciler) { r.scope = s }
}

// WithStatusDelay sets how long a unit status change that no reader needs at
// once may wait to go with the next one (DefaultStatusDelay); 0 writes every
// change at once.
func WithStatusDelay(d time.Duration) Option {
	return func(r *JobReconciler) { r.statusDelay = d }
}

// WithRunningTimeout suspends a released job that runs no pod within
// timeout (0: never) and queues it again after backoff: its unit backs off
// in phase TimeoutBackoff meanwhile, its quota given back once its pods are
// gone. A unit found in TimeoutBackoff (Koord-Queue's) is queued again
// after backoff whatever the timeout.
func WithRunningTimeout(timeout, backoff time.Duration) Option {
	return func(r *JobReconciler) { r.runningTimeout, r.backoff = timeout, backoff }
}

// WithPriorityLimit sets which PriorityClasses give a unit their value
// (DefaultPriorityLimit).
func WithPriorityLimit(l PriorityLimit) Option {
	return func(r *JobReconciler) { r.priorities = l }
}

// WithMaxDeclaredExecutionTime sets the most a job's max-exec-time label
// may declare (DefaultMaxDeclaredExecutionTime), in whole seconds: a label
// declaring more gives its unit this much, with a Warning event on the job.
func WithMaxDeclaredExecutionTime(d time.Duration) Option {
	return func(r *JobReconciler) { r.maxExecTime = ceilingSeconds(d) }
}

// WithSlotExpectations sets the pods let through that the cache does not
// show yet: the pod webhook's (NewPodGate) and every job reconciler's of
// the process. By default a reconciler has its own.
func WithSlotExpectations(s *SlotExpectations) Option {
	return func(r *JobReconciler) { r.slots = s }
}

// WithClock sets the clock status times are read from.
func WithClock(c clock.PassiveClock) Option {
	return func(r *JobReconciler) { r.clock = c }
}

// NewJobReconciler returns the reconciler of integ's jobs. c is the
// manager's cached client; reader reads around the cache when a write
// conflicts.
func NewJobReconciler(c client.Client, reader client.Reader, recorder record.EventRecorder, integ Integration, opts ...Option) *JobReconciler {
	r := &JobReconciler{client: c, reader: reader, recorder: recorder, integ: integ, clock: clock.RealClock{},
		statusDelay: DefaultStatusDelay, deferredSince: map[client.ObjectKey]time.Time{}, priorities: DefaultPriorityLimit,
		maxExecTime: ceilingSeconds(DefaultMaxDeclaredExecutionTime)}
	for _, o := range opts {
		o(r)
	}
	if r.slots == nil {
		r.slots = NewSlotExpectations(r.clock)
	}
	return r
}

// SetupWithManager runs the reconciler in mgr, woken by the framework's
// jobs, the units they own, their pods taking or leaving a node, quotas
// coming to serve their namespaces and, for a kind other jobs make, the
// units of those jobs. Call SetupIndexes first.
func (r *JobReconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := ctrl.NewControllerManagedBy(mgr).
		Named(r.integ.Name).
		For(r.integ.NewJob().Object()).
		// What Owns would do, without the REST mapping it looks up for
		// each event (3 % of the extensions' CPU): a unit wakes the job
		// of the reconciler's kind that controls it, in its namespace.
		Watches(&schedulingv1alpha1.QueueUnit{}, handler.EnqueueRequestsFromMapFunc(r.jobControllingUnit)).
		// A unit under a job's unit name that the job does not control (a
		// user's, another kind's) wakes the job when it goes, so that the
		// job gets a unit of its own (the QueueUnitNameTaken event asks
		// for the unit to be deleted).
		Watches(&schedulingv1alpha1.QueueUnit{}, handler.EnqueueRequestsFromMapFunc(r.jobOfUnitName), builder.WithPredicates(goes)).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(r.jobsOfPod), builder.WithPredicates(podCountChanged)).
		// A pod waiting at koord-queue's gate may be let through once its
		// pod set has room (openGates).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(r.jobsOfGatedPods), builder.WithPredicates(gateMayOpen)).
		Watches(&elasticquotav1alpha1.ElasticQuota{}, r.jobsOfNewlyServedNamespaces())
	if r.scope.ownsJobsOfKind(r.integ.GVK.GroupKind()) {
		// A job another job made is judged again as its owner's unit
		// comes, goes, is admitted or evicted (coveredByOwner), and as
		// another job its owner made changes its spec, which may take a
		// share of the owner's admission it did not (coveredWithin).
		b = b.Watches(&schedulingv1alpha1.QueueUnit{}, handler.EnqueueRequestsFromMapFunc(r.jobsMadeByUnitsJob), builder.WithPredicates(admissionChanged))
		for _, other := range r.scope.Jobs {
			b = b.Watches(other.NewJob().Object(), handler.EnqueueRequestsFromMapFunc(r.jobsMadeBySameOwner),
				builder.WithPredicates(predicate.GenerationChangedPredicate{}))
		}
	}
	if m, ok := r.integ.NewJob().(JobWithMadeJobs); ok {
		// A job it made whose spec changes (a RayCluster scaled) may take
		// it past its admission (madeExcess).
		for _, kind := range m.MadeKinds() {
			b = b.Owns(kind, builder.WithPredicates(predicate.GenerationChangedPredicate{}))
		}
	}
	if err := b.Complete(r); err != nil {
		return fmt.Errorf("setting up the %s extension: %w", r.integ.Name, err)
	}
	return nil
}

// Reconcile reads a job and its unit and moves them one step toward each
// other:
//
//  1. a job that is gone or going takes its unit with it;
//  2. a managed job without a unit gets one;
//  3. the unit's status follows the job's (running, finished);
//  4. a job whose unit waits is suspended, its pod counts and templates
//     restored and, while it waits in the queue, its unit resized to match it;
//  5. a job whose unit is admitted is released with its pod set updates and
//     the pod counts admitted (partial admission), or queued again if it grew.
func (r *JobReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	job := r.integ.NewJob()
	obj := job.Object()
	if err := r.client.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, r.deleteUnitOfGoneJob(ctx, req.NamespacedName)
		}
		return ctrl.Result{}, fmt.Errorf("getting %s %s: %w", r.integ.GVK.Kind, req, err)
	}
	unit, ok, err := r.unitOf(ctx, job)
	if err != nil || !ok {
		return ctrl.Result{}, err
	}
	var result ctrl.Result
	switch {
	case !obj.GetDeletionTimestamp().IsZero():
		if unit != nil {
			r.forgetDeferred(client.ObjectKeyFromObject(unit))
			err = r.deleteUnit(ctx, unit)
		}
	case unit == nil:
		err = r.queue(ctx, job)
	default:
		result.RequeueAfter, err = r.follow(ctx, job, unit)
	}
	switch {
	case apierrors.IsConflict(err):
		// The cache is behind; the newer object's event brings us back.
		ctrl.LoggerFrom(ctx).V(3).Info("Write conflicted; waiting for the newer object", "err", err)
		return ctrl.Result{}, nil
	case apierrors.IsAlreadyExists(err):
		// The job's unit exists but the cache has not shown it. Its event
		// brings the job back only if the job controls it (Owns); a unit
		// that is not the job's, or one Koord-Queue made, brings nothing,
		// so look again.
		ctrl.LoggerFrom(ctx).V(3).Info("QueueUnit not cached yet; looking again", "err", err)
		return ctrl.Result{RequeueAfter: uncachedUnitDelay}, nil
	}
	return result, err
}

// uncachedUnitDelay is how long the reconciler waits before looking again
// for a unit the API server has and its cache does not yet.
const uncachedUnitDelay = time.Second

// jobOfUnitName names the job of the reconciler's kind whose unit would be
// called as u is (Integration.UnitName), whether or not it exists.
func (r *JobReconciler) jobOfUnitName(_ context.Context, u client.Object) []reconcile.Request {
	name, ok := strings.CutSuffix(u.GetName(), r.integ.UnitSuffix)
	if !ok || name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: u.GetNamespace(), Name: name}}}
}

// jobControllingUnit names the job of the reconciler's kind that controls
// u, if one does.
func (r *JobReconciler) jobControllingUnit(_ context.Context, u client.Object) []reconcile.Request {
	c := metav1.GetControllerOf(u)
	if c == nil || !r.isOurKind(c.APIVersion, c.Kind) {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: u.GetNamespace(), Name: c.Name}}}
}

// goes lets through an object's deletion alone.
var goes = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	UpdateFunc:  func(event.UpdateEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// unitOf is the job's unit, nil when it has none. A unit Koord-Queue made
// for the job is adopted (adopt.go); a unit left by an earlier job of the
// same name is deleted; a unit of that name that is not the job's, or cannot
// be adopted, is left alone, and ok is false.
func (r *JobReconciler) unitOf(ctx context.Context, job GenericJob) (unit *schedulingv1alpha1.QueueUnit, ok bool, err error) {
	obj := job.Object()
	var u schedulingv1alpha1.QueueUnit
	key := client.ObjectKey{Namespace: obj.GetNamespace(), Name: r.integ.UnitName(obj.GetName())}
	if err := r.client.Get(ctx, key, &u); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, true, nil
		}
		return nil, false, fmt.Errorf("getting QueueUnit %s: %w", key, err)
	}
	owner := metav1.GetControllerOf(&u)
	switch {
	case owner != nil && owner.UID == obj.GetUID():
		return &u, true, nil
	case owner == nil && ownerRefTo(&u, string(obj.GetUID())) != nil:
		adopted, err := r.adopt(ctx, job, &u, ownerRefTo(&u, string(obj.GetUID())))
		if err != nil || !adopted {
			return nil, false, err
		}
		return &u, true, nil
	case r.ownedByOurKind(&u, obj.GetName()):
		ctrl.LoggerFrom(ctx).Info("Deleting the QueueUnit of an earlier job of the same name", "queueUnit", klog.KObj(&u))
		return nil, true, r.deleteUnit(ctx, &u)
	case r.unitOfMaker(obj, &u):
		return nil, false, r.holdMadeJob(ctx, job, key.Name)
	default:
		r.recorder.Eventf(obj, corev1.EventTypeWarning, ReasonUnitNameTaken,
			"QueueUnit %s exists and does not belong to this job; rename the job or delete the unit", key.Name)
		return nil, false, nil
	}
}

// unitOfMaker reports whether u, under the name of obj's unit, is the unit
// of the job that made obj: with unit names without suffix a job one of
// Scope.Owners made may be called as its maker (KubeRay names a RayJob's
// submitter Job after the RayJob), and so would its unit be.
func (r *JobReconciler) unitOfMaker(obj client.Object, u *schedulingv1alpha1.QueueUnit) bool {
	maker, ok := controllerOf(obj)
	if !ok {
		return false
	}
	if _, ok := r.scope.ownerOf(maker.Kind, r.integ.GVK.GroupKind()); !ok {
		return false
	}
	owner := metav1.GetControllerOf(u)
	return owner != nil && owner.UID == maker.UID
}

// holdMadeJob decides for a job whose unit name is its maker's unit
// (unitOfMaker): it can have no unit of its own. Within its maker's
// admission it runs, as any job its maker's admission covers; otherwise,
// when the queue would manage it, it is held suspended, with no unit,
// rather than queued by itself (AnnotationHeldForOwner), says so once, and
// is resumed once its maker's admission covers it. (Its maker's framework
// may delete it meanwhile: KubeRay deletes a suspended RayJob's submitter
// Job, and makes it again at the next release.)
func (r *JobReconciler) holdMadeJob(ctx context.Context, job GenericJob, unitName string) error {
	obj := job.Object()
	if _, _, finished := job.Finished(); finished || !obj.GetDeletionTimestamp().IsZero() {
		return nil
	}
	verdict, err := r.scope.Judge(ctx, r.client, r.integ.GVK.GroupKind(), job)
	if err != nil {
		return err
	}
	_, held := obj.GetAnnotations()[schedulingv1alpha1.AnnotationHeldForOwner]
	switch {
	case verdict.Owner == "": // covered by its maker's admission
		if !held {
			return nil
		}
		return r.patchJob(ctx, job, func() {
			annotations := obj.GetAnnotations()
			delete(annotations, schedulingv1alpha1.AnnotationHeldForOwner)
			obj.SetAnnotations(annotations)
			job.Resume()
		})
	case !verdict.Managed || job.IsSuspended() || !verdict.EvenIfRunning:
		return nil // not the queue's, or held already
	}
	maker, _ := controllerOf(obj)
	if err := r.patchJob(ctx, job, func() {
		annotations := obj.GetAnnotations()
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[schedulingv1alpha1.AnnotationHeldForOwner] = string(maker.UID)
		obj.SetAnnotations(annotations)
		job.Suspend()
	}); err != nil {
		return err
	}
	r.recorder.Event(obj, corev1.EventTypeWarning, ReasonOwnerNotAdmitted, fmt.Sprintf(
		"Not covered by an owner's admission: %s. Its QueueUnit would be %s, its owner's, so it is not queued by itself: it is suspended until its owner's admission covers it",
		verdict.Owner, unitName))
	return nil
}

// ownedByOurKind reports whether u's controller, or the owner reference
// Koord-Queue gave it (ownerOfKind), is a job of this integration's kind
// called name.
func (r *JobReconciler) ownedByOurKind(u *schedulingv1alpha1.QueueUnit, name string) bool {
	owner := r.ownerOfKind(u)
	return owner != nil && owner.Name == name && r.isOurKind(owner.APIVersion, owner.Kind)
}

// deleteUnitOfGoneJob deletes the unit of a job that no longer exists. The
// garbage collector would too, but later; deleting now gives the quota back
// at once.
func (r *JobReconciler) deleteUnitOfGoneJob(ctx context.Context, job client.ObjectKey) error {
	var u schedulingv1alpha1.QueueUnit
	key := client.ObjectKey{Namespace: job.Namespace, Name: r.integ.UnitName(job.Name)}
	r.forgetDeferred(key)
	if err := r.client.Get(ctx, key, &u); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !r.ownedByOurKind(&u, job.Name) {
		return nil
	}
	return r.deleteUnit(ctx, &u)
}

func (r *JobReconciler) deleteUnit(ctx context.Context, u *schedulingv1alpha1.QueueUnit) error {
	uid := u.UID
	if err := r.client.Delete(ctx, u, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting QueueUnit %s: %w", klog.KObj(u), err)
	}
	return nil
}

// queue creates the unit of a managed job that has none. A job found
// running without one (submitted running, or its unit lost) is suspended in
// the same pass, so that it runs unqueued no longer than one reconcile.
func (r *JobReconciler) queue(ctx context.Context, job GenericJob) error {
	obj := job.Object()
	if _, _, finished := job.Finished(); finished {
		return nil
	}
	// A job released by an admission that runs without a unit lost it (say,
	// deleted by hand) and with it the quota it was charged: like a job
	// submitted running, it gets a unit and is suspended until admitted.
	running := !job.IsSuspended()
	lost := running && obj.GetAnnotations()[schedulingv1alpha1.AnnotationReleasedBy] != ""
	if running && !lost && !r.scope.takesRunning(job) {
		return nil // running and, with the compatibility switch, not the queue's
	}
	verdict, err := r.scope.Judge(ctx, r.client, r.integ.GVK.GroupKind(), job)
	if err != nil {
		return err
	}
	if !verdict.Managed || running && !verdict.EvenIfRunning && !lost {
		return nil
	}

	sets, unitSets, setsErr, err := r.jobPodSets(ctx, job)
	if err != nil {
		return err
	}
	className, priority, priorityWarning, err := resolvePriority(ctx, r.client, r.priorities, job, sets)
	if err != nil {
		return err
	}
	unit := newQueueUnit(r.integ, obj, unitSets, className, priority, verdict.NamespaceQuota, verdict.NamespaceRule)
	runtime, runtimeWarning := declaredRuntime(obj.GetLabels(), r.maxExecTime)
	declareRuntime(unit, obj.GetLabels(), runtime)

	var warnings []Warning
	switch {
	case verdict.Owner != "":
		warnings = append(warnings, ownerWarning(verdict.Owner, unit.Name, running))
	case lost:
		warnings = append(warnings, Warning{Reason: ReasonUnitDeleted, Message: fmt.Sprintf(
			"The job's QueueUnit was deleted while the job ran, so its quota was no longer charged; the job is suspended and queued again as QueueUnit %s", unit.Name)})
	case running && !heldByItself(job):
		warnings = append(warnings, submittedRunningWarning(verdict.Quota, unit.Name))
	}
	if setsErr != nil {
		holdInvalid(unit, setsErr.Error())
		warnings = append(warnings, invalidJobWarning(setsErr))
	} else if isZero(unit.Spec.Request) {
		warnings = append(warnings, Warning{Reason: ReasonNoRequests,
			Message: "No container of the job requests any resource; it is queued but uses no quota. Set resources.requests on its containers"})
	}
	if priorityWarning != nil {
		warnings = append(warnings, *priorityWarning)
	}
	if runtimeWarning != nil {
		warnings = append(warnings, *runtimeWarning)
	}
	if w, ok := job.(JobWithWarnings); ok {
		warnings = append(warnings, w.Warnings()...)
	}

	if err := r.client.Create(ctx, unit, FieldOwner); err != nil {
		return fmt.Errorf("creating QueueUnit %s: %w", klog.KObj(unit), err)
	}
	ctrl.LoggerFrom(ctx).V(2).Info("Created QueueUnit", "queueUnit", klog.KObj(unit), "jobRunning", running)
	messages := make([]string, 0, len(warnings)+1)
	if verdict.NamespaceQuota != "" {
		messages = append(messages, "Queued: "+verdict.NamespaceRule.Describe(verdict.NamespaceQuota))
	}
	for _, w := range warnings {
		r.recorder.Event(obj, corev1.EventTypeWarning, w.Reason, w.Message)
		messages = append(messages, w.Message)
	}
	now := metav1.NewTime(r.clock.Now())
	err = r.patchUnit(ctx, unit, true, func(u *schedulingv1alpha1.QueueUnit) bool {
		changed := queueunit.Enqueue(u, strings.Join(messages, "\n"), now)
		if setsErr != nil {
			changed = invalidCondition(u, invalidJobWarning(setsErr).Message, now) || changed
		}
		return changed
	})
	if client.IgnoreNotFound(err) != nil || !running {
		return client.IgnoreNotFound(err)
	}
	// Suspended in this pass, not the next: the framework's controller
	// removes the pods the job runs (a batch Job's are deleted). Should this
	// write fail, the unit's next event suspends the job (hold).
	return r.patchJob(ctx, job, job.Suspend)
}

// jobPodSets are job's pod sets and its unit's (unitPodSets, with the
// LimitRange defaults of its namespace and its RuntimeClasses' overheads);
// setsErr says why the job cannot be queued as it is, err that the
// LimitRanges or RuntimeClasses could not be read.
func (r *JobReconciler) jobPodSets(ctx context.Context, job GenericJob) (sets []PodSet, unitSets []schedulingv1alpha1.PodSet, setsErr, err error) {
	if sets, setsErr = job.PodSets(); setsErr != nil {
		return sets, nil, setsErr, nil
	}
	made, err := creationOf(ctx, r.client, job.Object().GetNamespace(), sets)
	if err != nil {
		return nil, nil, nil, err
	}
	unitSets, setsErr = unitPodSets(sets, made)
	return sets, unitSets, setsErr, nil
}

// submittedRunningWarning tells the user why a job they submitted running
// was suspended, and how to submit it next time.
func submittedRunningWarning(quota, unitName string) Warning {
	until := fmt.Sprintf("until its QueueUnit %s is admitted", unitName)
	if quota != "" {
		until = fmt.Sprintf("until quota %s admits it (QueueUnit %s)", quota, unitName)
	}
	return Warning{Reason: ReasonSubmittedRunning, Message: "Submitted running: suspended " + until +
		". Submit queued jobs suspended (spec.suspend: true, or the framework's equivalent) so that none of their pods starts before admission"}
}

// ownerWarning tells the user why a job that names another job as its
// owner is queued by itself (Verdict.Owner).
func ownerWarning(why, unitName string, running bool) Warning {
	msg := "Not covered by an owner's admission: " + why + ". The job is queued by itself as QueueUnit " + unitName
	if running {
		msg += " and suspended until it is admitted"
	}
	return Warning{Reason: ReasonOwnerNotAdmitted, Message: msg}
}

// follow keeps a job and its unit in step. It returns when to look again
// at a status change it deferred.
func (r *JobReconciler) follow(ctx context.Context, job GenericJob, unit *schedulingv1alpha1.QueueUnit) (time.Duration, error) {
	seen, err := r.podsOf(ctx, job.Object())
	if err != nil {
		return 0, err
	}
	js := observe(job, seen)
	now := metav1.NewTime(r.clock.Now())
	// FollowJob changes the status alone: the copy shares the rest.
	followed := *unit
	followed.Status = *unit.Status.DeepCopy()
	var wait time.Duration
	changed := queueunit.FollowJob(&followed, js, now)
	if changed {
		wait = r.statusWait(client.ObjectKeyFromObject(unit), queueunit.NeededNow(&unit.Status, &followed.Status), now.Time)
	} else {
		r.forgetDeferred(client.ObjectKeyFromObject(unit))
	}
	if changed && wait == 0 {
		if err := r.patchUnit(ctx, unit, true, func(u *schedulingv1alpha1.QueueUnit) bool {
			return queueunit.FollowJob(u, js, now)
		}); err != nil {
			return 0, client.IgnoreNotFound(err)
		}
	}
	if js.Finished || queueunit.Finished(unit.EffectivePhase()) {
		r.forgetDeferred(client.ObjectKeyFromObject(unit))
		return 0, nil
	}
	timer, err := r.timeOut(ctx, job.Object(), unit, &followed, js, now)
	if err != nil {
		return 0, client.IgnoreNotFound(err)
	}
	wait = minPositive(wait, timer)

	sets, unitSets, setsErr, err := r.jobPodSets(ctx, job)
	if err != nil {
		return 0, err
	}
	switch phase := unit.EffectivePhase(); {
	case queueunit.Waiting(phase):
		return wait, r.hold(ctx, job, unit, sets, unitSets, setsErr)
	case queueunit.Admitted(phase):
		recheck, err := r.release(ctx, job, unit, sets, unitSets, setsErr)
		return minPositive(wait, recheck), err
	}
	return wait, nil
}

// minPositive is the sooner of two waits, 0 meaning none.
func minPositive(a, b time.Duration) time.Duration {
	if a == 0 || b > 0 && b < a {
		return b
	}
	return a
}

// timeOut sends the unit of a job released for longer than the running
// timeout without running a pod (followed: the unit as the job, js, says
// it is now, its pod counts perhaps not written yet) to TimeoutBackoff, and
// queues a unit whose backoff ended again (queueunit.BackOff, EndBackoff).
// A unit backing off is Waiting, so the same pass suspends its job (hold).
// It returns when the next of these is due, 0 if none is.
func (r *JobReconciler) timeOut(ctx context.Context, obj client.Object, unit, followed *schedulingv1alpha1.QueueUnit, js queueunit.JobState, now metav1.Time) (time.Duration, error) {
	if deadline, ok := queueunit.RunningDeadline(followed, js, r.runningTimeout, now.Time); ok {
		if now.Time.Before(deadline) {
			return deadline.Sub(now.Time), nil
		}
		backedOff := false
		if err := r.patchUnit(ctx, unit, true, func(u *schedulingv1alpha1.QueueUnit) bool {
			backedOff = queueunit.BackOff(u, js, r.runningTimeout, r.backoff, now)
			return backedOff
		}); err != nil {
			return 0, err
		}
		if backedOff {
			ctrl.LoggerFrom(ctx).V(2).Info("No pod ran within the running timeout; backing off", "queueUnit", klog.KObj(unit), "runningTimeout", r.runningTimeout, "backoff", r.backoff)
			r.recorder.Event(unit, corev1.EventTypeWarning, schedulingv1alpha1.EvictedByBackoffTimeout, unit.Status.Message)
		}
	}
	end, ok := queueunit.BackoffEnd(unit, r.backoff)
	if !ok {
		return 0, nil
	}
	if now.Time.Before(end) {
		return end.Sub(now.Time), nil
	}
	requeued := false
	if err := r.patchUnit(ctx, unit, true, func(u *schedulingv1alpha1.QueueUnit) bool {
		requeued = queueunit.EndBackoff(u, r.backoff, now)
		return requeued
	}); err != nil {
		return 0, err
	}
	if requeued {
		ctrl.LoggerFrom(ctx).V(2).Info("Backoff ended; queued again", "queueUnit", klog.KObj(unit))
		r.recorder.Event(obj, corev1.EventTypeNormal, ReasonRequeued, "The backoff after the running timeout ended: QueueUnit "+unit.Name+" is queued again")
	}
	return 0, nil
}

// hold keeps the job of a waiting unit suspended with its templates as they
// were queued, and keeps a queued unit the size of its job.
func (r *JobReconciler) hold(ctx context.Context, job GenericJob, unit *schedulingv1alpha1.QueueUnit, sets []PodSet, unitSets []schedulingv1alpha1.PodSet, setsErr error) error {
	obj := job.Object()
	if !job.IsSuspended() {
		if err := r.patchJob(ctx, job, job.Suspend); err != nil {
			return err
		}
		r.recorder.Event(obj, corev1.EventTypeNormal, ReasonSuspended, suspendMessage(unit))
		return nil
	}
	if restored, err := r.restoreCounts(ctx, job); err != nil || restored {
		return err // its update brings it back, asking for its own counts again
	}
	if err := r.restore(ctx, job, unit, sets); err != nil {
		return err
	}
	// What the last release's updates did is moot once the job is held.
	if err := r.patchUnit(ctx, unit, true, func(u *schedulingv1alpha1.QueueUnit) bool {
		return apimeta.RemoveStatusCondition(&u.Status.Conditions, schedulingv1alpha1.QueueUnitPodSetUpdatesApplied)
	}); err != nil {
		return err
	}
	if unit.EffectivePhase() != schedulingv1alpha1.Enqueued {
		return nil // the queue controller is working on it
	}
	if queueunit.HoldsQuota(unit) {
		// Evicted, and its pods are not gone yet: they still hold its
		// quota, so it is not resized (nor queued again at a new size)
		// until FollowJob gives its admissions back.
		return nil
	}
	if err := r.followDeclaredRuntime(ctx, obj, unit); err != nil {
		return err
	}
	if setsErr != nil {
		reason := setsErr.Error()
		if unit.Annotations[schedulingv1alpha1.AnnotationInvalidJob] == reason {
			return nil
		}
		w := invalidJobWarning(setsErr)
		if err := r.patchUnit(ctx, unit, false, func(u *schedulingv1alpha1.QueueUnit) bool {
			holdInvalid(u, reason)
			return true
		}); err != nil {
			return err
		}
		r.recorder.Event(obj, corev1.EventTypeWarning, w.Reason, w.Message)
		now := metav1.NewTime(r.clock.Now())
		return r.patchUnit(ctx, unit, true, func(u *schedulingv1alpha1.QueueUnit) bool {
			u.Status.Message = w.Message
			invalidCondition(u, w.Message, now)
			return true
		})
	}
	wasHeld := isHeldInvalid(unit)
	resized := false
	err := r.patchUnit(ctx, unit, false, func(u *schedulingv1alpha1.QueueUnit) bool {
		resized = resizeUnit(u, unitSets)
		return resized
	})
	if errors.Is(err, queueunit.ErrHoldsQuota) {
		// Admitted (or reserved) meanwhile at its old size: release
		// queues the job again at its new size on the unit's next event.
		ctrl.LoggerFrom(ctx).V(2).Info("Not resizing the QueueUnit: it holds quota", "queueUnit", klog.KObj(unit))
		return nil
	}
	if err != nil || !resized {
		return err
	}
	r.recorder.Eventf(obj, corev1.EventTypeNormal, ReasonUpdatedUnit, "QueueUnit %s now asks for %s", unit.Name, resources.Describe(unit.Spec.Request))
	if wasHeld {
		return r.patchUnit(ctx, unit, true, func(u *schedulingv1alpha1.QueueUnit) bool {
			u.Status.Message = ""
			apimeta.RemoveStatusCondition(&u.Status.Conditions, schedulingv1alpha1.QueueUnitInvalidJob)
			return true
		})
	}
	return nil
}

// followDeclaredRuntime keeps a waiting unit's maximum execution time what
// its job's labels declare (declareRuntime), and says so on the job when it
// changes. A unit that holds quota, admitted meanwhile, keeps the limit it
// was admitted with: a label changed while the job runs applies once its
// unit is queued again.
func (r *JobReconciler) followDeclaredRuntime(ctx context.Context, obj client.Object, unit *schedulingv1alpha1.QueueUnit) error {
	seconds, warning := declaredRuntime(obj.GetLabels(), r.maxExecTime)
	changed := false
	if err := r.patchUnit(ctx, unit, false, func(u *schedulingv1alpha1.QueueUnit) bool {
		changed = !queueunit.HoldsQuota(u) && declareRuntime(u, obj.GetLabels(), seconds)
		return changed
	}); err != nil || !changed {
		return err
	}
	if warning != nil {
		r.recorder.Event(obj, corev1.EventTypeWarning, warning.Reason, warning.Message)
		return nil
	}
	r.recorder.Event(obj, corev1.EventTypeNormal, ReasonUpdatedUnit, describeRuntime(unit))
	return nil
}

// release runs the job of an admitted unit with the unit's pod set updates,
// recording first on the unit what they replace, and with the pod counts
// of a partial admission. A job that grew past what its unit holds, or one
// admitted partially that cannot run fewer pods, is suspended and queued
// again at its own size: its unit is deleted and the next pass creates a
// new one. It returns when to look again at the pods of a released job
// (openGates).
func (r *JobReconciler) release(ctx context.Context, job GenericJob, unit *schedulingv1alpha1.QueueUnit, sets []PodSet, unitSets []schedulingv1alpha1.PodSet, setsErr error) (time.Duration, error) {
	if requeued, err := r.requeueOutgrown(ctx, job, unit, sets, unitSets, setsErr); err != nil || requeued {
		return 0, err
	}
	if !job.IsSuspended() {
		return r.keepReleased(ctx, job, unit)
	}
	return 0, r.resume(ctx, job, unit, sets)
}

// requeueOutgrown suspends and queues again a job that grew past what its
// unit was admitted with, or one admitted partially that cannot run fewer
// pods (release); it reports whether the job was such a job.
func (r *JobReconciler) requeueOutgrown(ctx context.Context, job GenericJob, unit *schedulingv1alpha1.QueueUnit, sets []PodSet, unitSets []schedulingv1alpha1.PodSet, setsErr error) (bool, error) {
	obj := job.Object()
	partial := queueunit.PartialCounts(unit)
	_, scales := job.(JobWithPartialAdmission)
	cannotShrink := partial != nil && !scales
	held := unitSets
	if isAdopted(unit) {
		held = withoutSetsKoordQueueLeftOut(job, unit, unitSets) // admitted by Koord-Queue without them
	}
	var grown []string
	if setsErr == nil {
		grown = excess(unit, held, partial)
	}
	made, err := r.madeExcess(ctx, job, unit)
	if err != nil {
		return false, err
	}
	grown = append(grown, made...)
	outgrown := unit.Annotations[annotationOutgrown]
	if len(grown) > 0 && outgrown == "" {
		outgrown = outgrownMark(grown)
		if err := r.patchUnit(ctx, unit, false, func(u *schedulingv1alpha1.QueueUnit) bool {
			metav1.SetMetaDataAnnotation(&u.ObjectMeta, annotationOutgrown, outgrown)
			return true
		}); err != nil {
			return false, err
		}
	}
	if cannotShrink || outgrown != "" {
		// Suspend, restore the counts and the templates (steps of their
		// own, see restore), then let the unit go; the next pass queues the
		// job afresh.
		if !job.IsSuspended() {
			if err := r.patchJob(ctx, job, job.Suspend); err != nil || outgrown == "" {
				return true, err
			}
			r.recorder.Event(obj, corev1.EventTypeWarning, ReasonExceedsAdmission, fmt.Sprintf(
				"The job asks for more than QueueUnit %s was admitted with (%s): it is suspended and queued again at its new size",
				unit.Name, outgrown))
			return true, nil
		}
		if restored, err := r.restoreCounts(ctx, job); err != nil || restored {
			return true, err
		}
		if err := r.restore(ctx, job, unit, sets); err != nil {
			return true, err
		}
		if err := r.deleteUnit(ctx, unit); err != nil {
			return true, err
		}
		if cannotShrink {
			r.recorder.Eventf(obj, corev1.EventTypeWarning, ReasonRequeued,
				"The QueueUnit was admitted with fewer pods than the job runs (%s), and a %s cannot run fewer; it is queued again whole",
				queueunit.PartialNote(unit, partial), r.integ.GVK.Kind)
			return true, nil
		}
		r.recorder.Event(obj, corev1.EventTypeWarning, ReasonRequeued, fmt.Sprintf(
			"The job grew past what its QueueUnit was admitted with (%s); it is queued again at its new size", outgrown))
		return true, nil
	}
	return false, nil
}

// keepReleased keeps a released job to what its unit was admitted with:
// a job resumed by someone else before its release is suspended again, a
// partially admitted one runs the pods admitted, and the gate of its pods
// the admission covers is opened (openGates, whose wait it returns).
func (r *JobReconciler) keepReleased(ctx context.Context, job GenericJob, unit *schedulingv1alpha1.QueueUnit) (time.Duration, error) {
	partial := queueunit.PartialCounts(unit)
	if !released(job, unit) {
		// Resumed by someone else after its admission, before its
		// release (its pods wait at koord-queue's gate): suspended, so
		// that the next pass releases it as a release does.
		return 0, r.patchJob(ctx, job, job.Suspend)
	}
	// A job admitted partially scales (requeueOutgrown).
	if scaler, ok := job.(JobWithPartialAdmission); ok && partial != nil {
		// It runs the pods admitted, whatever its spec was changed to
		// since (Kueue's webhook refuses such a change).
		if err := r.patchJob(ctx, job, func() { scaler.RunWithCounts(partial) }); err != nil {
			return 0, err
		}
	}
	return r.openGates(ctx, job, unit)
}

// resume releases a suspended job whose unit is admitted (release).
func (r *JobReconciler) resume(ctx context.Context, job GenericJob, unit *schedulingv1alpha1.QueueUnit, sets []PodSet) error {
	obj := job.Object()
	partial := queueunit.PartialCounts(unit)
	scaler, scales := job.(JobWithPartialAdmission)
	originals, err := originalsOf(unit)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Ignoring the recorded pod set originals")
		originals = nil
	}
	place, err := r.placementOf(ctx, unit)
	if err != nil {
		return err
	}
	if place != nil {
		if err := placementFits(sets, place, job); err != nil {
			// Not released: the job's next change brings us back.
			return r.reportPodSetUpdates(ctx, obj, unit, true, place, missedUpdates{}, err)
		}
	}
	updates := hasPodSetUpdates(unit.Status.AdmissionChecks) || place != nil
	// Only a job whose templates must change waits for them to unlock; one
	// resumed as it is (the common case, and a Job that ran before its
	// eviction keeps its start time while suspended, its templates named
	// for its unit at its first release) is released at once.
	if updates || originals != nil || !namedForUnit(sets, unit) {
		if locked, err := r.templatesLocked(ctx, job); err != nil || locked {
			return err // a locked job's next change brings us back
		}
	}
	if updates && (originals == nil || place != nil && completeOriginals(originals, sets, job)) {
		// Record what the updates replace before making them.
		if originals == nil {
			originals = recordOriginals(sets, job)
		}
		if err := r.patchUnit(ctx, unit, false, func(u *schedulingv1alpha1.QueueUnit) bool { return keepOriginals(u, originals) }); err != nil {
			return err
		}
	}
	var missed missedUpdates
	err = r.patchJob(ctx, job, func() {
		restorePodSets(sets, originals, job)
		if updates {
			missed = applyPodSetUpdates(sets, unit.Status.AdmissionChecks, place, job)
		}
		nameForUnit(sets, unit)
		switch {
		case partial != nil:
			scaler.RunWithCounts(partial)
		case scales:
			scaler.RestoreCounts() // admitted whole before its counts came back
		}
		annotations := obj.GetAnnotations()
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[schedulingv1alpha1.AnnotationReleasedBy] = string(unit.UID)
		annotations[schedulingv1alpha1.AnnotationJobDequeueTimestamp] = dequeueTimestamp(r.clock.Now())
		obj.SetAnnotations(annotations)
		job.Resume()
	})
	if err != nil {
		return err
	}
	if err := r.reportPodSetUpdates(ctx, obj, unit, updates, place, missed, nil); err != nil {
		return err
	}
	if !updates && originals != nil {
		if err := r.patchUnit(ctx, unit, false, func(u *schedulingv1alpha1.QueueUnit) bool { return keepOriginals(u, nil) }); err != nil {
			return err
		}
	}
	if partial != nil {
		msg := "The QueueUnit was admitted"
		if unit.Spec.Queue != "" {
			msg += " by queue " + unit.Spec.Queue
		}
		msg += fmt.Sprintf(" with %s (partial admission)", queueunit.PartialNote(unit, partial))
		r.recorder.Event(obj, corev1.EventTypeNormal, ReasonStarted, msg+"; the job is released")
	}
	return nil
}

// reportPodSetUpdates says on the unit, by its PodSetUpdatesApplied
// condition, whether the job took its admission checks' pod set updates
// and its placement on or off node pools, and warns on the job and the
// unit of those it could not apply, or of notReleased, why the job could
// not take its placement and is not released. A unit released without
// either keeps no such condition.
func (r *JobReconciler) reportPodSetUpdates(ctx context.Context, obj client.Object, unit *schedulingv1alpha1.QueueUnit, updates bool, place *placement, missed missedUpdates, notReleased error) error {
	cond := metav1.Condition{
		Type:    schedulingv1alpha1.QueueUnitPodSetUpdatesApplied,
		Status:  metav1.ConditionTrue,
		Reason:  ReasonPodSetUpdatesApplied,
		Message: "The job's templates took every pod set update of the admission checks",
	}
	if place != nil {
		cond.Message += " and " + place.String()
	}
	switch {
	case notReleased != nil:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, ReasonPodSetUpdatesNotApplied, capitalized(notReleased.Error())
	case !missed.empty():
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, ReasonPodSetUpdatesNotApplied, missed.String()
	}
	if cond.Status == metav1.ConditionFalse {
		r.recorder.Event(obj, corev1.EventTypeWarning, ReasonPodSetUpdatesNotApplied, cond.Message)
		r.recorder.Event(unit, corev1.EventTypeWarning, ReasonPodSetUpdatesNotApplied, cond.Message)
	}
	return r.patchUnit(ctx, unit, true, func(u *schedulingv1alpha1.QueueUnit) bool {
		if !updates {
			return apimeta.RemoveStatusCondition(&u.Status.Conditions, cond.Type)
		}
		cond.ObservedGeneration = u.Generation
		return apimeta.SetStatusCondition(&u.Status.Conditions, cond)
	})
}

// restoreCounts gives a suspended job back the pod counts a partial
// admission replaced (JobWithPartialAdmission); restored reports whether
// the job was written.
func (r *JobReconciler) restoreCounts(ctx context.Context, job GenericJob) (restored bool, err error) {
	s, ok := job.(JobWithPartialAdmission)
	if !ok {
		return false, nil
	}
	err = r.writeJob(ctx, job, patch.Main, func() bool {
		restored = s.RestoreCounts()
		return restored
	})
	return restored && err == nil, err
}

// restore puts a suspended job's templates back as they were before its
// unit's pod set updates, then forgets the originals. Kubernetes lets a
// suspended Job's scheduling directives change only once it is suspended
// (and its controller has cleared its start time), so this is a step of its
// own after Suspend.
func (r *JobReconciler) restore(ctx context.Context, job GenericJob, unit *schedulingv1alpha1.QueueUnit, sets []PodSet) error {
	originals, err := originalsOf(unit)
	if err != nil || originals == nil {
		return err
	}
	if locked, err := r.templatesLocked(ctx, job); err != nil || locked {
		return err // a locked job's next change brings us back
	}
	if err := r.patchJob(ctx, job, func() { restorePodSets(sets, originals, job) }); err != nil {
		return err
	}
	return r.patchUnit(ctx, unit, false, func(u *schedulingv1alpha1.QueueUnit) bool { return keepOriginals(u, nil) })
}

// templatesLocked reports whether job's templates cannot change now. A
// suspended job whose templates are locked is unlocked first
// (JobWithTemplateLock.UnlockTemplates, written to its status).
func (r *JobReconciler) templatesLocked(ctx context.Context, job GenericJob) (bool, error) {
	l, ok := job.(JobWithTemplateLock)
	if !ok || !l.TemplatesLocked() {
		return false, nil
	}
	if !job.IsSuspended() {
		return true, nil
	}
	if err := r.patchJobStatus(ctx, job, l.UnlockTemplates); err != nil {
		return true, err
	}
	return l.TemplatesLocked(), nil
}

// patchJob applies change to the job and writes what changed (see
// patch.Patch). Nothing is written when change changes nothing.
func (r *JobReconciler) patchJob(ctx context.Context, job GenericJob, change func()) error {
	return r.writeJob(ctx, job, patch.Main, func() bool { change(); return true })
}

// patchJobStatus is patchJob for the job's status.
func (r *JobReconciler) patchJobStatus(ctx context.Context, job GenericJob, change func()) error {
	return r.writeJob(ctx, job, patch.Status, func() bool { change(); return true })
}

// writeJob writes change to the job once, without reading it again on a
// conflict: change was decided on this copy (pod sets point into it), so
// the job's next event brings the reconciler back to decide afresh.
// change reports false when it changed nothing.
func (r *JobReconciler) writeJob(ctx context.Context, job GenericJob, part patch.Part, change func() bool) error {
	_, err := patch.Patch(ctx, r.client, nil, job.Object(), part, FieldOwner, func(client.Object) bool {
		return change()
	})
	if err != nil {
		return fmt.Errorf("%s: %w", r.integ.GVK.Kind, err)
	}
	return nil
}

// patchUnit applies mutate to u (its status when status is true) and writes
// it with patch.Patch; u ends as written.
func (r *JobReconciler) patchUnit(ctx context.Context, u *schedulingv1alpha1.QueueUnit, status bool, mutate func(*schedulingv1alpha1.QueueUnit) bool) error {
	part := patch.Main
	if status {
		part = patch.Status
	}
	_, err := patch.Patch(ctx, r.client, r.reader, u, part, FieldOwner, mutate)
	return err
}

// statusWait is how long the status change of the unit at key may still
// wait to be written: 0 when a reader needs it now, or once it has waited
// statusDelay since first seen.
func (r *JobReconciler) statusWait(key client.ObjectKey, neededNow bool, now time.Time) time.Duration {
	r.deferredMu.Lock()
	defer r.deferredMu.Unlock()
	since, deferred := r.deferredSince[key]
	if neededNow || r.statusDelay <= 0 {
		delete(r.deferredSince, key)
		return 0
	}
	if !deferred {
		r.deferredSince[key] = now
		return r.statusDelay
	}
	if left := r.statusDelay - now.Sub(since); left > 0 {
		return left
	}
	delete(r.deferredSince, key)
	return 0
}

func (r *JobReconciler) forgetDeferred(key client.ObjectKey) {
	r.deferredMu.Lock()
	defer r.deferredMu.Unlock()
	delete(r.deferredSince, key)
}

func suspendMessage(u *schedulingv1alpha1.QueueUnit) string {
	if c := apimeta.FindStatusCondition(u.Status.Conditions, schedulingv1alpha1.QueueUnitEvicted); c != nil && c.Status == metav1.ConditionTrue {
		msg := fmt.Sprintf("Suspended: QueueUnit %s was evicted (%s)", u.Name, c.Reason)
		if c.Message != "" {
			msg += ": " + c.Message
		}
		return msg
	}
	return fmt.Sprintf("Suspended: QueueUnit %s is not admitted yet", u.Name)
}

func invalidJobWarning(err error) Warning {
	return Warning{Reason: ReasonInvalidJob, Message: "The job cannot be queued: " + err.Error() + ". Its QueueUnit is held inactive until the job is fixed"}
}

func isZero(rl corev1.ResourceList) bool {
	for _, q := range rl {
		if !q.IsZero() {
			return false
		}
	}
	return true
}
