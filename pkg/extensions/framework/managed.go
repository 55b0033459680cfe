package framework

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
	"github.com/koord-queue/koord-queue/pkg/quota"
	"github.com/koord-queue/koord-queue/pkg/watched"
)

// IndexQuotaNamespaces indexes ElasticQuotas by each namespace their
// quota.scheduling.koordinator.sh/namespaces annotation lists.
const IndexQuotaNamespaces = "elasticquota.quotaNamespaces"

// IndexQuotaName indexes ElasticQuotas by name, of which the API server
// keeps one per namespace (inUseQuota).
const IndexQuotaName = "elasticquota.quotaName"

// SetupIndexes registers the field indexes the reconcilers of integs use
// (those with PodOwners need one of their own; IndexJobController finds the
// jobs another job made). Call it once per manager,
// before the manager starts.
func SetupIndexes(ctx context.Context, indexer client.FieldIndexer, integs ...Integration) error {
	if err := indexer.IndexField(ctx, &elasticquotav1alpha1.ElasticQuota{}, IndexQuotaNamespaces, QuotaNamespacesIndex); err != nil {
		return fmt.Errorf("indexing ElasticQuotas by namespace: %w", watched.NoElasticQuotaCRD(err))
	}
	if err := indexer.IndexField(ctx, &elasticquotav1alpha1.ElasticQuota{}, IndexQuotaName, QuotaNameIndex); err != nil {
		return fmt.Errorf("indexing ElasticQuotas by name: %w", watched.NoElasticQuotaCRD(err))
	}
	if err := indexer.IndexField(ctx, &corev1.Pod{}, IndexPodOwner, PodOwnerIndex); err != nil {
		return fmt.Errorf("indexing pods by controller: %w", err)
	}
	for _, obj := range ControllerIndexed(integs...) {
		if err := indexer.IndexField(ctx, obj, IndexJobController, PodOwnerIndex); err != nil {
			return fmt.Errorf("indexing %T by controller: %w", obj, err)
		}
	}
	for _, i := range integs {
		if i.PodOwners == nil {
			continue
		}
		if err := indexer.IndexField(ctx, i.NewJob().Object(), IndexJobPodOwners, i.JobPodOwnersIndex); err != nil {
			return fmt.Errorf("indexing %ss by the owners of their pods: %w", i.GVK.Kind, err)
		}
	}
	return nil
}

// ControllerIndexed are empty objects of the kinds SetupIndexes indexes by
// IndexJobController, each once: the jobs of integs, and those their
// frameworks make for them (JobWithMadeJobs).
func ControllerIndexed(integs ...Integration) []client.Object {
	seen := map[reflect.Type]bool{}
	var out []client.Object
	add := func(obj client.Object) {
		if t := reflect.TypeOf(obj); !seen[t] {
			seen[t] = true
			out = append(out, obj)
		}
	}
	for _, i := range integs {
		add(i.NewJob().Object())
		if m, ok := i.NewJob().(JobWithMadeJobs); ok {
			for _, kind := range m.MadeKinds() {
				add(kind)
			}
		}
	}
	return out
}

// QuotaNamespacesIndex is the index function of IndexQuotaNamespaces; a
// malformed annotation indexes nothing.
func QuotaNamespacesIndex(o client.Object) []string {
	ns, _ := elasticquotav1alpha1.ServedNamespaces(o.GetAnnotations())
	return ns
}

// QuotaNameIndex is the index function of IndexQuotaName.
func QuotaNameIndex(o client.Object) []string {
	return []string{o.GetName()}
}

// inUseQuota is the ElasticQuota called name that koord-queue uses: of
// several in different namespaces, the oldest (quota.OlderFirst, as
// koord-queue's admission and its Queue sync choose); nil when there is
// none, or the cluster has no ElasticQuota CRD.
func inUseQuota(ctx context.Context, c client.Reader, name string) (*elasticquotav1alpha1.ElasticQuota, error) {
	var list elasticquotav1alpha1.ElasticQuotaList
	if err := c.List(ctx, &list, client.MatchingFields{IndexQuotaName: name}); err != nil {
		if apimeta.IsNoMatchError(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("listing ElasticQuotas named %s: %w", name, err)
	}
	var used *elasticquotav1alpha1.ElasticQuota
	for i := range list.Items {
		if used == nil || quota.OlderFirst(&list.Items[i], used) < 0 {
			used = &list.Items[i]
		}
	}
	return used, nil
}

// QuotaForNamespace is the quota that serves ns for a job that names none,
// by koord-scheduler's rules (queueunit.QuotaOf): the ElasticQuota named
// after ns and living in ns, else the first by name whose namespaces
// annotation lists ns; empty when none does or when the cluster has no
// ElasticQuota CRD. Of several ElasticQuotas of one name, only the one in
// use (inUseQuota) counts, as in koord-queue's admission. The default quota
// is not a fallback here: that would queue every job of the cluster.
func QuotaForNamespace(ctx context.Context, c client.Reader, ns string) (string, queueunit.QuotaRule, error) {
	q := namespaceQuotas{ns: ns}
	switch named, err := inUseQuota(ctx, c, ns); {
	case err != nil:
		return "", "", err
	case named != nil && named.Namespace == ns:
		q.namedAfter = true
	}
	var list elasticquotav1alpha1.ElasticQuotaList
	if err := c.List(ctx, &list, client.MatchingFields{IndexQuotaNamespaces: ns}); err != nil {
		if apimeta.IsNoMatchError(err) {
			return "", "", nil
		}
		return "", "", fmt.Errorf("listing ElasticQuotas serving namespace %s: %w", ns, err)
	}
	for _, eq := range list.Items {
		if q.serving != "" && eq.Name >= q.serving {
			continue
		}
		used, err := inUseQuota(ctx, c, eq.Name)
		if err != nil {
			return "", "", err
		}
		if used != nil && used.Namespace == eq.Namespace {
			q.serving = eq.Name
		}
	}
	name, rule := queueunit.QuotaOf(nil, "", ns, q)
	return name, rule, nil
}

// namespaceQuotas is what QuotaForNamespace knows of the quotas serving one
// namespace.
type namespaceQuotas struct {
	ns         string
	namedAfter bool
	serving    string
}

func (q namespaceQuotas) NamedAfter(ns string) bool { return ns == q.ns && q.namedAfter }
func (q namespaceQuotas) Serving(ns string) string {
	if ns != q.ns {
		return ""
	}
	return q.serving
}

// Exists is false: the default quota serves no job here (see QuotaForNamespace).
func (namespaceQuotas) Exists(string) bool { return false }

// Scope says which jobs the queue manages. The reconcilers and the webhook
// share it.
type Scope struct {
	// ManageAllJobs manages every job of an enabled kind, labelled or not,
	// suspended at submission or not.
	ManageAllJobs bool
	// LeaveJobsSubmittedRunning is Koord-Queue v1.8's behaviour, kept as a
	// compatibility switch: a job that names a quota but is submitted
	// running is left to run unqueued. By default such a job is suspended
	// until its unit is admitted, since the label says "queue this".
	LeaveJobsSubmittedRunning bool
	// Owners are the enabled frameworks whose jobs make other jobs
	// (Integration.Makes). A job one of them made runs within its owner's
	// admission while the owner is admitted (see coveredByOwner).
	Owners []Integration
	// Jobs are all the enabled frameworks: those of the jobs an owner made
	// that share its admission (coveredWithin).
	Jobs []Integration
}

// Validate reports settings that contradict each other.
func (s Scope) Validate() error {
	if s.ManageAllJobs && s.LeaveJobsSubmittedRunning {
		return errors.New("--manage-all-jobs suspends jobs submitted running and --leave-jobs-submitted-running leaves them running: choose one")
	}
	return nil
}

// Verdict is Scope's answer for one job.
type Verdict struct {
	// Managed: the queue manages the job if it is submitted suspended.
	Managed bool
	// EvenIfRunning: the queue manages the job even if it was submitted
	// running; it is suspended until its unit is admitted.
	EvenIfRunning bool
	// Quota is the quota the job's labels name, else the one its namespace
	// falls back to; empty when neither names one (--manage-all-jobs).
	Quota string
	// NamespaceQuota is the quota the job's namespace falls back to when its
	// labels name none, and NamespaceRule the rule that chose it.
	NamespaceQuota string
	NamespaceRule  queueunit.QuotaRule
	// Owner says why the job's owner, a job that makes jobs of its kind,
	// does not cover it, such as "its owner RayJob rj is not admitted";
	// empty when no such owner is named.
	Owner string
}

// Judge decides whether the queue manages job, of kind kind: never while
// the job runs within its owner's admission (coveredByOwner); a job with a
// custom check (JobWithManagedCheck) when it says so; otherwise a job whose
// labels name a quota or whose namespace an ElasticQuota serves. With
// ManageAllJobs, every job.
func (s Scope) Judge(ctx context.Context, c client.Reader, kind schema.GroupKind, job GenericJob) (Verdict, error) {
	obj := job.Object()
	covered, why, err := s.coveredByOwner(ctx, c, kind, job)
	if err != nil || covered {
		return Verdict{}, err
	}
	v := Verdict{Owner: why}
	v.Quota = elasticquotav1alpha1.QuotaNameFromLabels(obj.GetLabels())
	labelled := v.Quota != ""
	if !labelled {
		q, rule, err := QuotaForNamespace(ctx, c, obj.GetNamespace())
		if err != nil {
			return Verdict{}, err
		}
		v.NamespaceQuota, v.NamespaceRule, v.Quota = q, rule, q
	}
	if custom, ok := job.(JobWithManagedCheck); ok {
		v.Managed = custom.IsManaged()
	} else {
		v.Managed = labelled || v.NamespaceQuota != ""
	}
	if s.ManageAllJobs {
		v.Managed = true
	}
	v.EvenIfRunning = v.Managed && s.takesRunning(job)
	return v, nil
}

// takesRunning reports whether a job submitted running can be managed at
// all: by default yes; with LeaveJobsSubmittedRunning only when the job says
// by itself (an Argo Workflow, whose koord-queue-suspend step holds it
// wherever it runs). It reads nothing, so with the compatibility switch a
// reconciler can skip Judge for the many running jobs that are not the
// queue's.
func (s Scope) takesRunning(job GenericJob) bool {
	return s.ManageAllJobs || heldByItself(job) || !s.LeaveJobsSubmittedRunning
}

// heldByItself reports whether a job found running still waits for its
// unit by its own design, as an Argo Workflow does at its
// koord-queue-suspend step: submitting it running is no mistake.
func heldByItself(job GenericJob) bool {
	_, ok := job.(JobWithManagedCheck)
	return ok
}

// jobsOfNewlyServedNamespaces wakes the integration's jobs in each namespace
// a quota comes to serve, as it is created or its namespaces annotation
// grows. An unlabelled job judged before the extensions' cache had its
// namespace's quota was found unmanaged, and no event of its own would
// bring it back: a suspended one would wait with no unit and no word.
func (r *JobReconciler) jobsOfNewlyServedNamespaces() handler.EventHandler {
	wake := func(ctx context.Context, namespaces []string, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		for _, ns := range namespaces {
			jobs, err := r.jobsIn(ctx, ns)
			if err != nil {
				// The cache does not fail a list; a job missed here is
				// judged again at its next event.
				ctrl.LoggerFrom(ctx).Error(err, "Cannot list the jobs of a namespace a quota serves", "namespace", ns, "kind", r.integ.GVK.Kind)
				continue
			}
			for _, j := range jobs {
				q.Add(j)
			}
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			wake(ctx, namespacesNewlyServed(nil, e.Object), q)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			wake(ctx, namespacesNewlyServed(e.ObjectOld, e.ObjectNew), q)
		},
	}
}

// namespacesNewlyServed are the namespaces quota serves by koord-scheduler's
// rules (QuotaForNamespace) that old, the same quota before a change, did
// not; all of them when old is nil. A malformed annotation serves none.
func namespacesNewlyServed(old, quota client.Object) []string {
	if old != nil && old.GetAnnotations()[elasticquotav1alpha1.AnnotationQuotaNamespaces] == quota.GetAnnotations()[elasticquotav1alpha1.AnnotationQuotaNamespaces] {
		// koord-scheduler rewrites every quota's status about once a
		// second; a name never changes.
		return nil
	}
	served := func(o client.Object) []string {
		ns, _ := elasticquotav1alpha1.ServedNamespaces(o.GetAnnotations())
		if o.GetName() == o.GetNamespace() {
			ns = append(ns, o.GetNamespace())
		}
		return ns
	}
	now := served(quota)
	if old == nil {
		return now
	}
	before := served(old)
	return slices.DeleteFunc(now, func(ns string) bool { return slices.Contains(before, ns) })
}
