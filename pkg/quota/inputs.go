package quota

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// Inputs are copies of what the engine was fed: the cluster's capacity (nil
// if never set) and every quota's spec, by name. Fed to a new engine, with
// the same charges, they give the same tree (a forecast replays them).
func (e *Engine) Inputs() (capacity corev1.ResourceList, specs []Spec) {
	if e.capacitySet {
		capacity = e.capacity.DeepCopy()
	}
	for _, name := range slices.Sorted(maps.Keys(e.specs)) {
		s := e.specs[name]
		s.Min, s.Max, s.SharedWeight = s.Min.DeepCopy(), s.Max.DeepCopy(), s.SharedWeight.DeepCopy()
		specs = append(specs, s)
	}
	return capacity, specs
}
