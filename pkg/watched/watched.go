// Package watched says what koord-queue reads of the objects others write
// and it watches, ElasticQuotas and Nodes, so that an update changing none
// of it costs nothing. koord-scheduler rewrites every ElasticQuota's
// figures (the quota.scheduling.koordinator.sh/runtime, request, allocated,
// ... annotations and status.used) about once a second; taken as quota
// changes, they rebuilt the quota tree and woke every queue each time.
//
// Whoever makes koord-queue read another field of these objects adds it
// here, or its changes are missed.
package watched

import (
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
)

// What koord-queue reads of an ElasticQuota's labels and annotations: the
// quota tree (pkg/quota), the namespaces it serves (unit-to-quota mapping)
// and what its Queue copies (pkg/queue).

// readLabel: the tree's labels and the queue policy.
func readLabel(key string) bool {
	switch key {
	case elasticquotav1alpha1.LabelQuotaParent, elasticquotav1alpha1.LabelQuotaIsParent,
		elasticquotav1alpha1.LabelAllowLentResource, elasticquotav1alpha1.LabelAllowForceUpdate,
		elasticquotav1alpha1.LabelQuotaTreeID, elasticquotav1alpha1.LabelQuotaIsRoot,
		elasticquotav1alpha1.LabelQuotaProfile, elasticquotav1alpha1.LabelQuotaIgnoreDefaultTree,
		schedulingv1alpha1.LabelQueuePolicy:
		return true
	}
	return false
}

// readAnnotation: shared-weight, namespaces, a tree root's total-resource,
// and every koord-queue/* one.
func readAnnotation(key string) bool {
	return key == elasticquotav1alpha1.AnnotationSharedWeight || key == elasticquotav1alpha1.AnnotationQuotaNamespaces ||
		key == elasticquotav1alpha1.AnnotationTotalResource ||
		strings.HasPrefix(key, schedulingv1alpha1.AnnotationPrefix)
}

// ElasticQuotaChanged reports whether anything koord-queue reads differs
// between two versions of an ElasticQuota: its namespace, name, UID,
// creation and deletion, its spec (quantities compared by value), and the
// labels and annotations above. It runs for every update koord-scheduler
// makes, so it compares in place rather than building what it compares.
func ElasticQuotaChanged(old, updated *elasticquotav1alpha1.ElasticQuota) bool {
	return old.Namespace != updated.Namespace || old.Name != updated.Name || old.UID != updated.UID ||
		!old.CreationTimestamp.Equal(&updated.CreationTimestamp) ||
		(old.DeletionTimestamp != nil) != (updated.DeletionTimestamp != nil) ||
		!sameAmounts(old.Spec.Min, updated.Spec.Min) || !sameAmounts(old.Spec.Max, updated.Spec.Max) ||
		!sameRead(old.Labels, updated.Labels, readLabel) ||
		!sameRead(old.Annotations, updated.Annotations, readAnnotation)
}

// sameRead reports whether a and b agree on every key read accepts.
func sameRead(a, b map[string]string, read func(string) bool) bool {
	for key, value := range a {
		if read(key) {
			if other, ok := b[key]; !ok || other != value {
				return false
			}
		}
	}
	for key := range b {
		if _, ok := a[key]; !ok && read(key) {
			return false
		}
	}
	return true
}

// sameAmounts reports whether two resource lists name the same resources
// in the same amounts; nothing and an empty list are the same.
func sameAmounts(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for name, q := range a {
		if other, ok := b[name]; !ok || q.Cmp(other) != 0 {
			return false
		}
	}
	return true
}

// NodeCapacity is what a Node gives the cluster's capacity (the root
// quota's): its allocatable while it is Ready, schedulable and not being
// deleted; nil otherwise.
func NodeCapacity(n *corev1.Node) corev1.ResourceList {
	if n.Spec.Unschedulable || n.DeletionTimestamp != nil {
		return nil
	}
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			if cond.Status != corev1.ConditionTrue {
				return nil
			}
			return n.Status.Allocatable
		}
	}
	return nil
}

// CapacityChanged reports whether a Node gives the cluster a different
// capacity than before; heartbeats, images, labels and other conditions
// do not count. Quantities compare by value; nothing and an empty list are
// the same.
func CapacityChanged(before, after corev1.ResourceList) bool {
	return !sameAmounts(before, after)
}

// ErrNoElasticQuotaCRD: the cluster does not serve Koordinator's
// ElasticQuotas, which both binaries read.
var ErrNoElasticQuotaCRD = errors.New("koord-queue queues jobs by Koordinator's ElasticQuotas, " +
	"and the cluster has no CRD elasticquotas.scheduling.sigs.k8s.io: install Koordinator, " +
	"or set the chart value installElasticQuotaCRD: true")

// NoElasticQuotaCRD returns err, which came of reading ElasticQuotas,
// wrapped in ErrNoElasticQuotaCRD when it says the cluster has no such kind.
func NoElasticQuotaCRD(err error) error {
	if apimeta.IsNoMatchError(err) {
		return fmt.Errorf("%w: %w", ErrNoElasticQuotaCRD, err)
	}
	return err
}
