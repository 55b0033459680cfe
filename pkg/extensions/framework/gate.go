package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/podledger"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
	"github.com/koord-queue/koord-queue/pkg/resources"
)

// No pod of a queued job reaches a node uncharged, by construction: the pod
// webhook creates a pod of a queued job that its unit's admission does not
// cover with the scheduling gate schedulingv1alpha1.SchedulingGateAdmission
// (PodGate), and the job's reconciler removes the gate once the admission
// covers the pod (openGates). A gated pod holds nothing. The pods of a
// released job that fit its admission, an honest job's, are created as
// they are: the gate costs them no write.

// hasAdmissionGate reports whether pod waits at koord-queue's gate.
func hasAdmissionGate(pod *corev1.Pod) bool {
	return slices.ContainsFunc(pod.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool {
		return g.Name == schedulingv1alpha1.SchedulingGateAdmission
	})
}

// takesSlot reports whether pod takes one of the pods its pod set was
// admitted with: it is neither finished nor held at koord-queue's gate. A
// pod being deleted still holds its node, and so its slot; a pod held at
// another's gate will be scheduled without koord-queue's say.
func takesSlot(pod *corev1.Pod) bool {
	return pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed && !hasAdmissionGate(pod)
}

// GateVerdict is the pod gate's answer for a pod about to be created.
type GateVerdict struct {
	// Gate: the pod is created with the admission gate; Why says why.
	Gate bool
	Why  string
	// Refuse, when not empty, says why the pod is not created at all.
	Refuse string
}

// newPod is what the gate knows of a pod about to be created and of the
// job it belongs to.
type newPod struct {
	// Job: the pod belongs to a job of an enabled kind, by its controller
	// (or, for a pod without one, as the pod its job lists as the owner of
	// its other pods: a Spark driver). Queued: the queue manages that job.
	Job, Queued bool
	// Unit is the job's QueueUnit, nil when it has none yet. Released: the
	// job runs, released by Unit's admission.
	Unit     *schedulingv1alpha1.QueueUnit
	Released bool
	// NamedUnit is the unit the pod's koord-queue/related-queueunit
	// annotation names, "" if none.
	NamedUnit string
	// PodSet is the pod set the pod is of; MadeUp: its template is not the
	// job's own (an Argo Workflow's, a Spark application's pods), so the
	// admission says nothing of its pods' number or size.
	PodSet string
	MadeUp bool
	// Taken is how many pods of the pod set take one of its admitted pods
	// (takesSlot) besides this one.
	Taken int32
	// Request is what the pod asks for (resources.PodRequests).
	Request corev1.ResourceList
	// Bare: the pod has no controller. NamesQueue: it names a quota by its
	// label or a unit by koord-queue/related-queueunit.
	Bare, NamesQueue bool
	// Node is the node the pod is created bound to, "" if none.
	Node string
}

// decideGate is the gate's rule for a new pod p: a pod of a queued job is
// gated unless its unit's admission covers it (uncovered); one created
// bound to a node, which a gate cannot hold, is refused instead. A bare pod
// that names a quota or a unit is refused: it belongs to no queued job.
// Any other pod is left alone.
func decideGate(p newPod) GateVerdict {
	switch {
	case !p.Job && p.Bare && p.NamesQueue:
		return GateVerdict{Refuse: "a pod that names a quota (" + elasticquotav1alpha1.LabelQuotaName +
			") or a QueueUnit (" + schedulingv1alpha1.AnnotationRelatedQueueUnit + ") must be made by a queued job: " +
			"koord-queue does not queue bare pods. Run it as a Job submitted with spec.suspend: true, which waits for its quota"}
	case !p.Job || !p.Queued:
		return GateVerdict{}
	}
	why := uncovered(p)
	switch {
	case why == "":
		return GateVerdict{}
	case p.Node != "":
		return GateVerdict{Refuse: fmt.Sprintf("the pod names node %s, but koord-queue has not admitted it: %s", p.Node, why)}
	}
	return GateVerdict{Gate: true, Why: why}
}

// uncovered says why p's unit's admission does not cover it; "" when it
// does: the unit is admitted, its job released by that admission, the pod
// is of one of its pod sets, and (for a pod set of the job's own template)
// the pod set has fewer pods than it was admitted with and the pod asks
// for no more than each of them.
func uncovered(p newPod) string {
	u := p.Unit
	switch {
	case u == nil:
		return "its job's QueueUnit is not created yet"
	case p.NamedUnit != "" && p.NamedUnit != u.Name:
		return fmt.Sprintf("it names QueueUnit %s, not its job's, %s", p.NamedUnit, u.Name)
	case !queueunit.Admitted(u.EffectivePhase()) || u.DeletionTimestamp != nil:
		return fmt.Sprintf("QueueUnit %s is not admitted (%s)", u.Name, u.EffectivePhase())
	case !p.Released:
		return fmt.Sprintf("QueueUnit %s has not released its job yet", u.Name)
	}
	count, perPod, ok := queueunit.AdmittedPods(u, p.PodSet)
	switch {
	case !ok:
		return fmt.Sprintf("QueueUnit %s has no pod set %q", u.Name, p.PodSet)
	case p.MadeUp:
		return ""
	case p.Taken >= count:
		return fmt.Sprintf("pod set %s of QueueUnit %s has the %d pod(s) it was admitted with", p.PodSet, u.Name, count)
	case !resources.Fits(p.Request, perPod):
		return fmt.Sprintf("it asks for %s, more than the %s each pod of pod set %s of QueueUnit %s was admitted with",
			resources.Describe(p.Request), resources.Describe(perPod), p.PodSet, u.Name)
	}
	return ""
}

// released reports whether job runs released by unit's admission: it is
// not suspended and the release wrote unit's UID on it, or unit is one
// Koord-Queue admitted, adopted with its job running.
func released(job GenericJob, unit *schedulingv1alpha1.QueueUnit) bool {
	if job.IsSuspended() {
		return false
	}
	by := job.Object().GetAnnotations()[schedulingv1alpha1.AnnotationReleasedBy]
	return by != "" && by == string(unit.UID) || apimeta.IsStatusConditionTrue(unit.Status.Conditions, schedulingv1alpha1.QueueUnitAdopted)
}

// madeUp reports whether the job's pod set called name is made up
// (PodSet.MadeUp).
func madeUp(job GenericJob, name string) bool {
	sets, err := job.PodSets()
	if err != nil {
		return false
	}
	i := slices.IndexFunc(sets, func(s PodSet) bool { return s.Name == name })
	return i >= 0 && sets[i].MadeUp
}

// PodGate decides, for the pod webhook, whether a pod about to be created
// waits at the admission gate.
type PodGate struct {
	// cache is the manager's cache; api reads around it when the cache
	// would gate a pod, so that a job released a moment ago is not taken
	// for one that waits.
	cache, api client.Reader
	scheme     *runtime.Scheme
	integs     []Integration
	scope      Scope
	// slots are the pods let through that the cache does not show yet.
	slots *SlotExpectations
}

// NewPodGate returns the gate of the jobs of integs the queue manages as
// scope says. cache must have the indexes SetupIndexes registers; scheme
// knows the kinds of integs; slots must be the job reconcilers' own
// (WithSlotExpectations).
func NewPodGate(cache, api client.Reader, scheme *runtime.Scheme, integs []Integration, scope Scope, slots *SlotExpectations) *PodGate {
	return &PodGate{cache: cache, api: api, scheme: scheme, integs: integs, scope: scope, slots: slots}
}

// Decide returns the verdict for pod, about to be created in its namespace.
func (g *PodGate) Decide(ctx context.Context, pod *corev1.Pod) (GateVerdict, error) {
	_, hasController := controllerOf(pod)
	named, _ := podledger.NamedUnit(pod)
	p := newPod{
		Bare:       !hasController,
		NamesQueue: elasticquotav1alpha1.QuotaNameFromLabels(pod.Labels) != "" || named != "",
		NamedUnit:  named,
		Node:       pod.Spec.NodeName,
		Request:    resources.PodRequests(&pod.Spec),
	}
	jobs, err := g.jobsOfNewPod(ctx, pod)
	if err != nil {
		return GateVerdict{}, err
	}
	p.Job = len(jobs) > 0
	for _, j := range jobs {
		unit, err := unitOfJob(ctx, g.cache, j.integ, j.job)
		if err != nil {
			return GateVerdict{}, err
		}
		if unit == nil {
			queued, err := g.queued(ctx, j)
			if err != nil {
				return GateVerdict{}, err
			}
			p.Queued = p.Queued || queued
			continue
		}
		p.Queued, p.Unit = true, unit
		p.PodSet = j.integ.podSetOf(pod)
		return g.decideOn(ctx, p, j)
	}
	return decideGate(p), nil
}

// decideOn decides on p, a pod of j, which has the unit p.Unit. A pod let
// take a slot is expected until the cache shows it (SlotExpectations):
// the decisions on one job's pods take turns, reading only the cache
// while they do, so that a burst of pods waits on no API call.
func (g *PodGate) decideOn(ctx context.Context, p newPod, j jobOfPod) (GateVerdict, error) {
	p.Released = released(j.job, p.Unit)
	p.MadeUp = madeUp(j.job, p.PodSet)
	if uncovered(p) != "" { // for a reason other than a full pod set: none is counted yet
		// The cache may be a moment behind a release: look again around
		// it before holding the pod.
		if err := g.reread(ctx, &p, &j); err != nil {
			return GateVerdict{}, err
		}
	}
	slots := g.slots.Lock(j.job.Object().GetUID())
	defer slots.Unlock()
	pods, err := listJobPods(ctx, g.cache, j.integ, j.job.Object(), client.UnsafeDisableDeepCopy)
	if err != nil {
		return GateVerdict{}, err
	}
	slots.Observe(pods, j.integ.podSetOf)
	p.Taken = slots.Pending(p.PodSet)
	for i := range pods {
		if takesSlot(&pods[i]) && j.integ.podSetOf(&pods[i]) == p.PodSet {
			p.Taken++
		}
	}
	v := decideGate(p)
	if !v.Gate && v.Refuse == "" && !p.MadeUp {
		slots.Created(p.PodSet)
	}
	return v, nil
}

// reread reads j's job and p's unit again from the API server, and what p
// says of them.
func (g *PodGate) reread(ctx context.Context, p *newPod, j *jobOfPod) error {
	job := j.integ.NewJob()
	if err := g.api.Get(ctx, client.ObjectKeyFromObject(j.job.Object()), job.Object()); err != nil {
		return client.IgnoreNotFound(err)
	}
	if job.Object().GetUID() != j.job.Object().GetUID() {
		return nil // another job of the same name: the pod's is gone
	}
	unit, err := unitOfJob(ctx, g.api, j.integ, job)
	if err != nil || unit == nil {
		return err
	}
	j.job, p.Unit = job, unit
	p.Released = released(job, unit)
	p.MadeUp = madeUp(job, p.PodSet)
	return nil
}

// queued reports whether the queue manages j, which has no unit yet: it
// will get one and wait for its admission.
func (g *PodGate) queued(ctx context.Context, j jobOfPod) (bool, error) {
	if _, _, finished := j.job.Finished(); finished {
		return false, nil
	}
	if !j.job.IsSuspended() && !g.scope.takesRunning(j.job) {
		return false, nil
	}
	v, err := g.scope.Judge(ctx, g.cache, j.integ.GVK.GroupKind(), j.job)
	if err != nil {
		return false, err
	}
	return v.Managed && (j.job.IsSuspended() || v.EvenIfRunning), nil
}

// jobOfPod is a job a pod belongs to, and its integration.
type jobOfPod struct {
	integ Integration
	job   GenericJob
}

// jobsOfNewPod finds the jobs of the enabled kinds pod belongs to: its
// controller, if of an enabled kind, and the jobs that list its controller
// among the owners of their pods (PodOwners: a RayJob's RayCluster); for a
// pod without a controller, the jobs that list the pod itself as such an
// owner (a SparkApplication's driver, which Spark makes bare and the Spark
// operator's webhook gives its controller). A job is read from the cache,
// else around it: the pods of a job created a moment ago come at once.
func (g *PodGate) jobsOfNewPod(ctx context.Context, pod *corev1.Pod) ([]jobOfPod, error) {
	owner, ok := controllerOf(pod)
	if !ok {
		owner = PodOwner{Kind: schema.GroupKind{Kind: "Pod"}, Name: pod.Name}
		if pod.Name == "" {
			return nil, nil
		}
	}
	var out []jobOfPod
	for _, integ := range g.integs {
		if integ.PodOwners == nil {
			if !ok || owner.Kind != integ.GVK.GroupKind() {
				continue
			}
			job := integ.NewJob()
			key := client.ObjectKey{Namespace: pod.Namespace, Name: owner.Name}
			err := g.cache.Get(ctx, key, job.Object())
			if apierrors.IsNotFound(err) {
				err = g.api.Get(ctx, key, job.Object())
			}
			switch {
			case apierrors.IsNotFound(err) || apimeta.IsNoMatchError(err):
				continue
			case err != nil:
				return nil, fmt.Errorf("reading %s %s, the controller of a new pod: %w", integ.GVK.Kind, key, err)
			}
			if owner.UID == "" || job.Object().GetUID() == owner.UID {
				out = append(out, jobOfPod{integ: integ, job: job})
			}
			continue
		}
		list, err := jobsIndexedIn(ctx, g.cache, g.scheme, integ, pod.Namespace, IndexJobPodOwners, owner.key())
		if err != nil {
			return nil, err
		}
		for _, job := range list {
			if slices.ContainsFunc(integ.podOwners(job.Object()), func(o PodOwner) bool {
				return o.key() == owner.key() && (o.UID == "" || owner.UID == "" || o.UID == owner.UID)
			}) {
				out = append(out, jobOfPod{integ: integ, job: job})
			}
		}
	}
	return out, nil
}

// unitOfJob is job's unit as c has it: the unit of its unit name that the
// job controls; nil when there is none.
func unitOfJob(ctx context.Context, c client.Reader, integ Integration, job GenericJob) (*schedulingv1alpha1.QueueUnit, error) {
	obj := job.Object()
	var u schedulingv1alpha1.QueueUnit
	key := client.ObjectKey{Namespace: obj.GetNamespace(), Name: integ.UnitName(obj.GetName())}
	if err := c.Get(ctx, key, &u); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("getting QueueUnit %s: %w", key, err)
	}
	if owner := metav1.GetControllerOf(&u); owner == nil || owner.UID != obj.GetUID() {
		return nil, nil
	}
	return &u, nil
}

// jobsIndexedIn reads integ's jobs in namespace ns that index holds under
// key, from c, whose scheme knows integ's kind.
func jobsIndexedIn(ctx context.Context, c client.Reader, scheme *runtime.Scheme, integ Integration, ns, index, key string) ([]GenericJob, error) {
	list, err := newJobList(scheme, integ)
	if err != nil {
		return nil, err
	}
	names, err := listNames(ctx, c, list, integ, ns, index, key)
	if err != nil {
		return nil, err
	}
	out := make([]GenericJob, 0, len(names))
	for _, name := range names {
		job := integ.NewJob()
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, job.Object()); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("reading %s %s/%s: %w", integ.GVK.Kind, ns, name, err)
		}
		out = append(out, job)
	}
	return out, nil
}

// ReasonPodGated: a pod of a released job stays at koord-queue's gate
// whatever room its pod set has: it asks for more than each of its pods
// was admitted with, or names another unit or a pod set its unit lacks.
const ReasonPodGated = "PodHeldAtGate"

// openGates removes the admission gate from the pods of job, which unit's
// admission released, that the admission covers now (uncovered), by pod
// set, in name order, until each pod set has the pods it was admitted
// with, counting the pods let through that the cache does not show yet
// (SlotExpectations). The others stay gated, holding nothing: those of a
// pod set that is full are let through as its pods finish or go; one that
// room never lets through (it asks for more than each of its pod set's
// pods was admitted with) is named in a Warning event on the job. It
// returns when to look again: a pod expected and never seen gives its slot
// back after a while, and a pod gone before its gate was opened gives it
// back once the cache shows it gone.
func (r *JobReconciler) openGates(ctx context.Context, job GenericJob, unit *schedulingv1alpha1.QueueUnit) (time.Duration, error) {
	if !released(job, unit) {
		return 0, nil
	}
	open, stuck, recheck, err := r.gatesToOpen(ctx, job, unit)
	if err != nil {
		return 0, err
	}
	for i, p := range open {
		result, err := openGate(ctx, r.client, p)
		switch {
		case err != nil:
			r.notOpened(job, open[i:]...)
			return 0, err
		case result == podGone:
			r.notOpened(job, p)
			recheck = minPositive(recheck, uncachedPodDelay)
		case result == podChanged:
			// Its slot stays taken until the pod is seen again.
			recheck = minPositive(recheck, slotExpectationTTL)
		}
	}
	if stuck != "" {
		r.recorder.Event(job.Object(), corev1.EventTypeWarning, ReasonPodGated, stuck)
	}
	return recheck, nil
}

// uncachedPodDelay is how long the reconciler waits before looking again
// at a job one of whose pods the API server no longer has and its cache
// still shows.
const uncachedPodDelay = time.Second

// gatesToOpen picks the gated pods of job that unit's admission covers
// now (openGates), expecting each to take its slot before its gate is
// opened, so that the pod webhook counts it meanwhile. stuck names a pod
// no room lets through; recheck is when a pod expected would be forgotten
// unseen, if one holds a gated pod back.
func (r *JobReconciler) gatesToOpen(ctx context.Context, job GenericJob, unit *schedulingv1alpha1.QueueUnit) (open []*corev1.Pod, stuck string, recheck time.Duration, err error) {
	slots := r.slots.Lock(job.Object().GetUID())
	defer slots.Unlock()
	pods, err := listJobPods(ctx, r.client, r.integ, job.Object(), client.UnsafeDisableDeepCopy)
	if err != nil {
		return nil, "", 0, err
	}
	slots.Observe(pods, r.integ.podSetOf)
	taken := map[string]int32{}
	var gated []*corev1.Pod
	for i := range pods {
		p := &pods[i]
		switch {
		case !takesSlot(p) && hasAdmissionGate(p) && p.DeletionTimestamp == nil && !slots.IsOpened(p):
			gated = append(gated, p)
		case takesSlot(p):
			taken[r.integ.podSetOf(p)]++
		}
	}
	if len(gated) == 0 {
		return nil, "", 0, nil
	}
	slices.SortFunc(gated, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	madeUpSets := map[string]bool{}
	for _, p := range gated {
		set := r.integ.podSetOf(p)
		if _, ok := madeUpSets[set]; !ok {
			madeUpSets[set] = madeUp(job, set)
			taken[set] += slots.Pending(set) // those opened a moment ago included
		}
	}
	for _, p := range gated {
		np := newPod{Job: true, Queued: true, Unit: unit, Released: true, PodSet: r.integ.podSetOf(p),
			Taken: taken[r.integ.podSetOf(p)], Request: resources.PodRequests(&p.Spec)}
		np.MadeUp = madeUpSets[np.PodSet]
		np.NamedUnit, _ = podledger.NamedUnit(p)
		if uncovered(np) != "" {
			if slots.Pending(np.PodSet) > 0 {
				recheck = slots.Recheck()
			}
			// Waiting for room is no news; a pod no room lets through is.
			np.Taken = 0
			if why := uncovered(np); why != "" && stuck == "" {
				stuck = fmt.Sprintf("Pod %s waits at koord-queue's scheduling gate %s: %s", p.Name, schedulingv1alpha1.SchedulingGateAdmission, why)
			}
			continue
		}
		slots.Opened(p, np.PodSet)
		open = append(open, p.DeepCopy()) // openGate writes it
		taken[np.PodSet]++
	}
	return open, stuck, recheck, nil
}

// notOpened forgets that pods of job, picked by gatesToOpen, take a slot:
// their gates were not opened.
func (r *JobReconciler) notOpened(job GenericJob, pods ...*corev1.Pod) {
	slots := r.slots.Lock(job.Object().GetUID())
	defer slots.Unlock()
	for _, p := range pods {
		slots.NotOpened(p)
	}
}

// gateOpening is what became of a pod whose gate openGate removes.
type gateOpening int

const (
	gateOpened gateOpening = iota
	// podGone: the API server no longer has the pod.
	podGone
	// podChanged: its gates are not where the cache showed them; it is
	// read again at the next pass.
	podChanged
)

// openGate removes koord-queue's gate from pod, as c has it, with a JSON
// patch that tests the gate is where c saw it: gates are only ever
// removed, so a pod whose gates changed since is read again first.
func openGate(ctx context.Context, c client.Client, pod *corev1.Pod) (gateOpening, error) {
	i := slices.IndexFunc(pod.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool {
		return g.Name == schedulingv1alpha1.SchedulingGateAdmission
	})
	if i < 0 {
		return gateOpened, nil
	}
	path := fmt.Sprintf("/spec/schedulingGates/%d", i)
	patch, err := json.Marshal([]map[string]any{
		{"op": "test", "path": path + "/name", "value": schedulingv1alpha1.SchedulingGateAdmission},
		{"op": "remove", "path": path},
	})
	if err != nil {
		return 0, err
	}
	err = c.Patch(ctx, pod, client.RawPatch(types.JSONPatchType, patch), FieldOwner)
	switch {
	case apierrors.IsNotFound(err):
		return podGone, nil
	case apierrors.IsInvalid(err) || apierrors.IsConflict(err):
		ctrl.LoggerFrom(ctx).V(3).Info("Pod changed; opening its gate later", "pod", klog.KObj(pod), "err", err)
		return podChanged, nil
	case err != nil:
		return 0, fmt.Errorf("opening the scheduling gate of pod %s: %w", klog.KObj(pod), err)
	}
	ctrl.LoggerFrom(ctx).V(2).Info("Opened the scheduling gate of a pod its QueueUnit's admission covers", "pod", klog.KObj(pod))
	return gateOpened, nil
}

// gateMayOpen lets through the pod events after which a gated pod of the
// job may be let through: a pod created at the gate, and a pod that took
// one of its pod set's admitted pods finishing or going.
var gateMayOpen = predicate.Funcs{
	CreateFunc: func(e event.CreateEvent) bool { return gatedPod(e.Object) },
	UpdateFunc: func(e event.UpdateEvent) bool {
		return slotTaken(e.ObjectOld) && !slotTaken(e.ObjectNew)
	},
	DeleteFunc:  func(e event.DeleteEvent) bool { return slotTaken(e.Object) },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

func gatedPod(o client.Object) bool {
	pod, ok := o.(*corev1.Pod)
	return ok && hasAdmissionGate(pod)
}

func slotTaken(o client.Object) bool {
	pod, ok := o.(*corev1.Pod)
	return ok && takesSlot(pod)
}

// jobsOfGatedPods names the jobs of pod (jobsOfPod) when pod, or another
// pod of its controller, waits at koord-queue's gate: only then can the
// event let a pod through, and the many pods of jobs without gated pods
// wake nothing.
func (r *JobReconciler) jobsOfGatedPods(ctx context.Context, o client.Object) []reconcile.Request {
	pod, ok := o.(*corev1.Pod)
	if !ok {
		return nil
	}
	if !hasAdmissionGate(pod) {
		owner, ok := controllerOf(pod)
		if !ok {
			return nil
		}
		var list corev1.PodList
		if err := r.client.List(ctx, &list, client.InNamespace(pod.Namespace), client.MatchingFields{IndexPodOwner: owner.key()}); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Cannot list the pods of a pod's controller", "pod", klog.KObj(pod))
			return nil
		}
		if !slices.ContainsFunc(list.Items, func(p corev1.Pod) bool { return hasAdmissionGate(&p) }) {
			return nil
		}
	}
	return r.jobsOfPod(ctx, pod)
}
