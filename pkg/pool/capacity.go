// Package pool computes what a node pool offers its quota tree, as
// koord-manager's profile controller writes it into the tree's root quota
// (annotations quota.scheduling.koordinator.sh/total-resource and
// unschedulable-resource), for clusters where no koord-manager runs: the
// allocatable resources of the nodes an ElasticQuotaProfile's selector
// chooses, times its resource ratio. It also says where the pods of a
// quota's units must run for its tree (PlacementOf): koord-queue-controllers
// puts that on the pods at release, and koord-queue counts only those
// nodes when it places a unit within topology domains. It is pure: the
// caller lists the nodes, the quotas and the profiles.
package pool

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	quotav1alpha1 "github.com/koord-queue/koord-queue/apis/quota/v1alpha1"
)

// Capacity is what a pool's nodes offer.
type Capacity struct {
	// Total is the matching nodes' allocatable resources times the ratio,
	// as koord-manager's total-resource, but for nodes being deleted (which
	// koord-manager still counts): a node that is going away offers nothing,
	// as in the classic tree's capacity (watched.NodeCapacity).
	Total corev1.ResourceList
	// Unschedulable is the part of Total on nodes that are cordoned or not
	// Ready, as koord-manager's unschedulable-resource.
	Unschedulable corev1.ResourceList
}

// Schedulable is what the pool can run now: Total less Unschedulable.
func (c Capacity) Schedulable() corev1.ResourceList {
	out := corev1.ResourceList{}
	for name, q := range c.Total {
		q = q.DeepCopy()
		if u, ok := c.Unschedulable[name]; ok {
			q.Sub(u)
		}
		out[name] = q
	}
	return out
}

// Of computes the capacity of profile's pool from nodes (every node of the
// cluster; those its selector does not choose, and those being deleted, are
// skipped). A selector that does not parse is an error, and no capacity.
func Of(profile *quotav1alpha1.ElasticQuotaProfile, nodes []corev1.Node) (Capacity, error) {
	if profile.Spec.NodeSelector == nil {
		return Capacity{}, fmt.Errorf("ElasticQuotaProfile %s/%s: spec.nodeSelector is required", profile.Namespace, profile.Name)
	}
	selector, err := metav1.LabelSelectorAsSelector(profile.Spec.NodeSelector)
	if err != nil {
		return Capacity{}, fmt.Errorf("ElasticQuotaProfile %s/%s: spec.nodeSelector: %w", profile.Namespace, profile.Name, err)
	}
	c := Capacity{Total: corev1.ResourceList{}, Unschedulable: corev1.ResourceList{}}
	for i := range nodes {
		n := &nodes[i]
		if n.DeletionTimestamp != nil || !selector.Matches(labels.Set(n.Labels)) {
			continue
		}
		add(c.Total, n.Status.Allocatable)
		if n.Spec.Unschedulable || !ready(n) {
			add(c.Unschedulable, n.Status.Allocatable)
		}
	}
	ratio := Ratio(profile)
	scale(c.Total, ratio)
	scale(c.Unschedulable, ratio)
	return c, nil
}

// Ratio is the profile's resource ratio: its spec.resourceRatio when it is a
// number in (0, 1], otherwise 1, as koord-manager reads it.
func Ratio(profile *quotav1alpha1.ElasticQuotaProfile) float64 {
	if profile.Spec.ResourceRatio == nil {
		return 1
	}
	v, err := strconv.ParseFloat(*profile.Spec.ResourceRatio, 64)
	if err != nil || v <= 0 || v > 1 {
		return 1
	}
	return v
}

func ready(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func add(sum, l corev1.ResourceList) {
	for name, q := range l {
		s := sum[name]
		s.Add(q)
		sum[name] = s
	}
}

// scale multiplies each amount by ratio as koord-manager does: CPU in
// millicores, memory in bytes (binary), anything else in whole units, each
// rounded down.
func scale(l corev1.ResourceList, ratio float64) {
	if ratio == 1 {
		return
	}
	for name, q := range l {
		switch name {
		case corev1.ResourceCPU:
			l[name] = *resource.NewMilliQuantity(int64(float64(q.MilliValue())*ratio), resource.DecimalSI)
		case corev1.ResourceMemory:
			l[name] = *resource.NewQuantity(int64(float64(q.Value())*ratio), resource.BinarySI)
		default:
			l[name] = *resource.NewQuantity(int64(float64(q.Value())*ratio), resource.DecimalSI)
		}
	}
}
