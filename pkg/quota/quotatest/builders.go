// Package quotatest has builders for quota test objects, so a test case
// shows only what matters to it:
//
//	quotatest.MakeSpec("team-a").Max("cpu", "4", "memory", "8Gi").Obj()
package quotatest

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/koord-queue/koord-queue/pkg/quota"
)

// Res builds a ResourceList from name, quantity pairs. It is the tests' one
// resource-list builder, for quotas, units and jobs' pods alike: it lives
// here, in the lowest of the builders' packages, so pkg/testing/wrappers,
// extensionstest and schedtest can all use it. It panics on an odd number
// of arguments or a malformed quantity: it is for tests only.
func Res(pairs ...string) corev1.ResourceList {
	if len(pairs)%2 != 0 {
		panic(fmt.Sprintf("quotatest.Res: want name, quantity pairs, got an odd number of arguments %q", pairs))
	}
	out := corev1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		out[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return out
}

// SpecWrapper builds a quota.Spec.
type SpecWrapper struct{ quota.Spec }

// MakeSpec starts a quota under the root.
func MakeSpec(name string) *SpecWrapper { return &SpecWrapper{quota.Spec{Name: name}} }

// Parent sets the parent quota.
func (w *SpecWrapper) Parent(p string) *SpecWrapper { w.Spec.Parent = p; return w }

// IsParent labels the quota is-parent: "true", as a quota with children
// must be.
func (w *SpecWrapper) IsParent() *SpecWrapper { w.Spec.IsParent = true; return w }

// ForceUpdate labels the quota allow-force-update: "true".
func (w *SpecWrapper) ForceUpdate() *SpecWrapper { w.Spec.ForceUpdate = true; return w }

// Min sets min from name, quantity pairs.
func (w *SpecWrapper) Min(pairs ...string) *SpecWrapper { w.Spec.Min = Res(pairs...); return w }

// Max sets max from name, quantity pairs.
func (w *SpecWrapper) Max(pairs ...string) *SpecWrapper { w.Spec.Max = Res(pairs...); return w }

// Weight sets the shared weight from name, quantity pairs.
func (w *SpecWrapper) Weight(pairs ...string) *SpecWrapper {
	w.Spec.SharedWeight = Res(pairs...)
	return w
}

// Created sets the quota's creation time.
func (w *SpecWrapper) Created(t time.Time) *SpecWrapper { w.Spec.Created = t; return w }

// NoLending marks the quota allow-lent-resource: "false".
func (w *SpecWrapper) NoLending() *SpecWrapper { w.Spec.DisallowLending = true; return w }

// Tree puts the quota in the quota tree id (label tree-id).
func (w *SpecWrapper) Tree(id string) *SpecWrapper { w.Spec.TreeID = id; return w }

// TreeRoot makes the quota the root of quota tree id (labels tree-id and
// is-root "true"), the tree's capacity (annotation total-resource) from
// name, quantity pairs.
func (w *SpecWrapper) TreeRoot(id string, total ...string) *SpecWrapper {
	w.Spec.TreeID, w.Spec.IsTreeRoot, w.Spec.TreeTotal = id, true, Res(total...)
	return w
}

// Pool names the node pool of the tree the quota is the root of (its
// ElasticQuotaProfile: label profile).
func (w *SpecWrapper) Pool(name string) *SpecWrapper { w.Spec.Pool = name; return w }

// IgnoreDefaultTree labels the quota ignore-default-tree "true".
func (w *SpecWrapper) IgnoreDefaultTree() *SpecWrapper { w.Spec.IgnoreDefaultTree = true; return w }

// Obj returns the Spec.
func (w *SpecWrapper) Obj() quota.Spec { return w.Spec }
