// Package queue holds everything about Queue objects. The Reconciler keeps
// a Queue in namespace koord-queue for every ElasticQuota: same name,
// priority 1000, policy from the quota's koord-queue/queue-policy label and
// every koord-queue/* annotation copied. Queues it created are deleted when
// their quota goes; Queues a user created by hand are left alone. Queues
// Koord-Queue made (MadeByKoordQueue) are adopted: they follow their quota
// from then on. The StatusWriter (status.go) writes every Queue's status
// from what the admission Cache knows (StatusSource), at a bounded rate.
package queue

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/quota"
	"github.com/koord-queue/koord-queue/pkg/watched"
)

const (
	// LabelManagedBy marks Queues this controller owns.
	LabelManagedBy = "koord-queue/managed-by"
	// ManagedByElasticQuota is LabelManagedBy's value on Queues made from ElasticQuotas.
	ManagedByElasticQuota = "elasticquota"
	// AnnotationSourceNamespace records the namespace of the Queue's ElasticQuota.
	AnnotationSourceNamespace = "koord-queue/elasticquota-namespace"
	// AnnotationCopied lists the annotations copied from the ElasticQuota, so
	// one removed there is removed here too without touching the user's own.
	AnnotationCopied = "koord-queue/copied-annotations"

	// IndexElasticQuotaName indexes ElasticQuotas by name: names are unique
	// cluster-wide in Koordinator, but quotas live in any namespace.
	IndexElasticQuotaName = "elasticquota.name"

	// ReasonUnknownQueuePolicy is the Warning event for a bad policy label.
	ReasonUnknownQueuePolicy = "UnknownQueuePolicy"
	// ReasonDuplicateQuotaName is the Warning event (StatusWriter) on an
	// ElasticQuota not used because an older one in another namespace has
	// its name.
	ReasonDuplicateQuotaName = "DuplicateQuotaName"

	controllerName = "elasticquota-queue"
)

// Reconciler creates, updates and deletes Queues after ElasticQuotas. Its
// requests are keyed by quota name alone (no namespace).
type Reconciler struct {
	client   client.Client
	recorder record.EventRecorder
	// namespace holds the Queues.
	namespace string
}

var _ reconcile.Reconciler = (*Reconciler)(nil)

// NewReconciler returns a Reconciler keeping Queues in namespace (empty:
// schedulingv1alpha1.QueueNamespace).
func NewReconciler(c client.Client, recorder record.EventRecorder, namespace string) *Reconciler {
	if namespace == "" {
		namespace = schedulingv1alpha1.QueueNamespace
	}
	return &Reconciler{client: c, recorder: recorder, namespace: namespace}
}

// SetupIndexes registers the field indexes the Reconciler lists by.
func SetupIndexes(ctx context.Context, indexer client.FieldIndexer) error {
	err := indexer.IndexField(ctx, &elasticquotav1alpha1.ElasticQuota{}, IndexElasticQuotaName, func(o client.Object) []string {
		return []string{o.GetName()}
	})
	if err != nil {
		return fmt.Errorf("indexing ElasticQuotas by name: %w", watched.NoElasticQuotaCRD(err))
	}
	return nil
}

// SetupWithManager watches ElasticQuotas and the Queues in namespace koord-queue.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	byName := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: o.GetName()}}}
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named(controllerName).
		Watches(&elasticquotav1alpha1.ElasticQuota{}, byName, builder.WithPredicates(quotaReadChanged())).
		Watches(&schedulingv1alpha1.Queue{}, byName, builder.WithPredicates(inNamespace(r.namespace))).
		Complete(r)
}

// quotaReadChanged lets through the updates that change what koord-queue
// reads of an ElasticQuota: koord-scheduler rewrites every quota's figures
// about once a second, and each would be a reconcile (a list, a get, and
// again any Warning event the quota deserves) that changes nothing.
func quotaReadChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		old, okOld := e.ObjectOld.(*elasticquotav1alpha1.ElasticQuota)
		updated, okNew := e.ObjectNew.(*elasticquotav1alpha1.ElasticQuota)
		return !okOld || !okNew || watched.ElasticQuotaChanged(old, updated)
	}}
}

func inNamespace(namespace string) predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetNamespace() == namespace
	})
}

// Reconcile makes the Queue named req.Name match the ElasticQuota of that name.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	logger := log.FromContext(ctx).WithValues("elasticQuota", req.Name)
	quotas := &elasticquotav1alpha1.ElasticQuotaList{}
	if err := r.client.List(ctx, quotas, client.MatchingFields{IndexElasticQuotaName: req.Name}); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing ElasticQuotas named %s: %w", req.Name, err)
	}
	queue := &schedulingv1alpha1.Queue{}
	err := r.client.Get(ctx, client.ObjectKey{Namespace: r.namespace, Name: req.Name}, queue)
	if err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, fmt.Errorf("getting Queue %s: %w", req.Name, err)
	}
	exists := err == nil

	live := slices.DeleteFunc(quotas.Items, func(eq elasticquotav1alpha1.ElasticQuota) bool { return eq.DeletionTimestamp != nil })
	if len(live) == 0 {
		if exists && queue.Labels[LabelManagedBy] == ManagedByElasticQuota && queue.DeletionTimestamp == nil {
			logger.Info("Deleting Queue of a deleted ElasticQuota")
			if err := r.client.Delete(ctx, queue); client.IgnoreNotFound(err) != nil {
				return reconcile.Result{}, fmt.Errorf("deleting Queue %s: %w", req.Name, err)
			}
		}
		return reconcile.Result{}, nil
	}
	eq := &live[0]
	for i := range live {
		if quota.OlderFirst(&live[i], eq) < 0 {
			eq = &live[i]
		}
	}
	// Each other one gets its Warning event from the StatusWriter, once.

	if !exists {
		queue = &schedulingv1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{
			Name:      eq.Name,
			Namespace: r.namespace,
		}}
		r.applyQuota(queue, eq)
		logger.Info("Creating Queue for ElasticQuota", "policy", queue.Spec.QueuePolicy)
		if err := r.client.Create(ctx, queue); err != nil {
			if apierrors.IsAlreadyExists(err) {
				return reconcile.Result{Requeue: true}, nil
			}
			return reconcile.Result{}, fmt.Errorf("creating Queue %s: %w", eq.Name, err)
		}
		return reconcile.Result{}, nil
	}
	adopting := MadeByKoordQueue(queue)
	if queue.Labels[LabelManagedBy] != ManagedByElasticQuota && !adopting {
		// A Queue the user made by hand: theirs to configure.
		return reconcile.Result{}, nil
	}
	if adopting {
		logger.Info("Adopting the Queue Koord-Queue made for this ElasticQuota")
	}
	desired := queue.DeepCopy()
	r.applyQuota(desired, eq)
	if equalManagedFields(queue, desired) {
		return reconcile.Result{}, nil
	}
	logger.Info("Updating Queue after its ElasticQuota", "policy", desired.Spec.QueuePolicy)
	if err := r.client.Update(ctx, desired); err != nil {
		return reconcile.Result{}, fmt.Errorf("updating Queue %s: %w", eq.Name, err)
	}
	return reconcile.Result{}, nil
}

// AnnotationKoordQueueEnable is an annotation Koord-Queue (v1.8) puts on
// every Queue it makes from an ElasticQuota that has annotations (Koordinator
// annotates every quota it manages), copied from the quota, empty or not.
const AnnotationKoordQueueEnable = "quota-koord-queue-enable"

// MadeByKoordQueue reports whether q is a Queue Koord-Queue made from an
// ElasticQuota: no koord-queue/managed-by label, and the marks Koord-Queue
// leaves on the Queues it makes: the quota's parent label, or its
// quota-koord-queue-enable annotation (each present, even empty). Such a
// Queue is adopted (labelled koord-queue/managed-by) and follows its quota
// from then on; a Queue without either mark is taken for one made by hand.
func MadeByKoordQueue(q *schedulingv1alpha1.Queue) bool {
	if _, ok := q.Labels[LabelManagedBy]; ok {
		return false
	}
	_, parent := q.Labels[elasticquotav1alpha1.LabelQuotaParent]
	_, enable := q.Annotations[AnnotationKoordQueueEnable]
	return parent || enable
}

// applyQuota sets the Queue fields that follow the ElasticQuota. Fields the
// quota says nothing of (admission checks, a priority the user changed) are kept.
func (r *Reconciler) applyQuota(queue *schedulingv1alpha1.Queue, eq *elasticquotav1alpha1.ElasticQuota) {
	if queue.Labels == nil {
		queue.Labels = map[string]string{}
	}
	queue.Labels[LabelManagedBy] = ManagedByElasticQuota
	if queue.Annotations == nil {
		queue.Annotations = map[string]string{}
	}
	queue.Annotations[AnnotationSourceNamespace] = eq.Namespace
	for _, key := range strings.Split(queue.Annotations[AnnotationCopied], ",") {
		if _, still := eq.Annotations[key]; key != "" && !still {
			delete(queue.Annotations, key)
		}
	}
	var copied []string
	for key, value := range eq.Annotations {
		if strings.HasPrefix(key, schedulingv1alpha1.AnnotationPrefix) {
			queue.Annotations[key] = value
			copied = append(copied, key)
		}
	}
	slices.Sort(copied)
	if len(copied) > 0 {
		queue.Annotations[AnnotationCopied] = strings.Join(copied, ",")
	} else {
		delete(queue.Annotations, AnnotationCopied)
	}

	queue.Spec.QueuePolicy = r.policyOf(eq)
	if queue.Spec.Priority == nil {
		queue.Spec.Priority = ptr.To(schedulingv1alpha1.DefaultQueuePriority)
	}
}

// policyOf reads the koord-queue/queue-policy label; an unknown value falls
// back to Priority with a Warning event on the ElasticQuota.
func (r *Reconciler) policyOf(eq *elasticquotav1alpha1.ElasticQuota) schedulingv1alpha1.QueuePolicy {
	value, ok := eq.Labels[schedulingv1alpha1.LabelQueuePolicy]
	switch p := schedulingv1alpha1.QueuePolicy(value); {
	case !ok || value == "":
		return schedulingv1alpha1.QueuePolicyPriority
	case p == schedulingv1alpha1.QueuePolicyPriority, p == schedulingv1alpha1.QueuePolicyBlock, p == schedulingv1alpha1.QueuePolicyIntelligent:
		return p
	default:
		r.recorder.Eventf(eq, corev1.EventTypeWarning, ReasonUnknownQueuePolicy,
			"label %s=%q is not Priority, Block or Intelligent; Queue %s/%s uses Priority",
			schedulingv1alpha1.LabelQueuePolicy, value, r.namespace, eq.Name)
		return schedulingv1alpha1.QueuePolicyPriority
	}
}

func equalManagedFields(a, b *schedulingv1alpha1.Queue) bool {
	return maps.Equal(a.Labels, b.Labels) && maps.Equal(a.Annotations, b.Annotations) &&
		a.Spec.QueuePolicy == b.Spec.QueuePolicy && ptr.Equal(a.Spec.Priority, b.Spec.Priority)
}
