package topology

import (
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// Selection is which nodes a pod set's pods can be scheduled to, as the
// kube-scheduler's NodeAffinity and TaintToleration filters decide: those
// its nodeSelector and required node affinity select, whose NoSchedule and
// NoExecute taints its tolerations tolerate. The zero Selection selects
// every node and tolerates no taint, as a pod that says nothing does.
type Selection struct {
	affinity nodeaffinity.RequiredNodeAffinity
	// selects: the pod set has a nodeSelector or a required node affinity.
	selects     bool
	tolerations []corev1.Toleration
	// within are node selectors a node must meet each of besides
	// (Within): the node pool placement of the pods.
	within []*nodeaffinity.LazyErrorNodeSelector
	// key tells Selections apart, so that pod sets selecting alike share
	// their counts: equal keys, equal Selections. The zero key is the zero
	// Selection's.
	key [sha256.Size]byte
}

// MaxSelectionBytes bounds the node selection (nodeSelector, required node
// affinity, tolerations, as protobuf) of a pod set that asks for a level:
// each snapshot evaluates it against every node, in the one admission loop
// every tenant shares, and the API server bounds it only by the object's
// size.
const MaxSelectionBytes = 8 << 10

// CheckSelection says why the node selection of spec is too large to be
// placed, nil when it is not.
func CheckSelection(spec *corev1.PodSpec) error {
	var required *corev1.NodeSelector
	if a := spec.Affinity; a != nil && a.NodeAffinity != nil {
		required = a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	only := corev1.PodSpec{NodeSelector: spec.NodeSelector, Tolerations: spec.Tolerations}
	if required != nil {
		only.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: required}}
	}
	if n := only.Size(); n > MaxSelectionBytes {
		return fmt.Errorf("its nodeSelector, required node affinity and tolerations take %d bytes; a pod set that asks for a topology level may have at most %d", n, MaxSelectionBytes)
	}
	return nil
}

// SelectionOf is the Selection of the pods of spec. Their tolerations are
// the template's and, for each extended resource a container asks for
// (nvidia.com/gpu), one of a NoSchedule taint keyed by its name: the
// ExtendedResourceToleration admission plugin, which clusters tainting
// their GPU nodes so run, adds those to each pod; without the plugin such
// a pod is left Pending by the scheduler, not by us.
func SelectionOf(spec *corev1.PodSpec) Selection {
	var required *corev1.NodeSelector
	if a := spec.Affinity; a != nil && a.NodeAffinity != nil {
		required = a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	tolerations := withExtendedResourceTolerations(spec)
	if len(spec.NodeSelector) == 0 && required == nil && len(tolerations) == 0 {
		return Selection{}
	}
	only := corev1.PodSpec{NodeSelector: spec.NodeSelector, Tolerations: tolerations}
	if required != nil {
		only.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: required}}
	}
	// The protobuf encoding writes a map's keys in order: one encoding per
	// selection. A tenant's selection costs its size here, once per Place.
	data, _ := only.Marshal()
	return Selection{
		affinity:    nodeaffinity.GetRequiredNodeAffinity(&corev1.Pod{Spec: only}),
		selects:     len(spec.NodeSelector) > 0 || required != nil,
		tolerations: tolerations,
		key:         sha256.Sum256(data),
	}
}

// Within is s narrowed to the nodes that also meet each of selectors (the
// terms of each are alternatives): what a pod's required node affinity
// selects once each selector's terms are multiplied into its own, as
// koord-queue-controllers keeps a job's pods to their quota tree's node
// pool at release (pool.Placement.NodeSelectors). A selector's term that
// does not parse selects nothing, as the scheduler reads it. s itself
// when there are none.
func (s Selection) Within(selectors []*corev1.NodeSelector) Selection {
	if len(selectors) == 0 {
		return s
	}
	h := sha256.New()
	h.Write(s.key[:])
	s.within = append(make([]*nodeaffinity.LazyErrorNodeSelector, 0, len(s.within)+len(selectors)), s.within...)
	for _, sel := range selectors {
		s.within = append(s.within, nodeaffinity.NewLazyErrorNodeSelector(sel))
		data, _ := sel.Marshal()
		h.Write(data)
	}
	h.Sum(s.key[:0])
	s.selects = true
	return s
}

// IsZero reports whether s selects every node and tolerates no taint.
func (s Selection) IsZero() bool { return s.key == [sha256.Size]byte{} }

// admits reports whether the pods of s can be scheduled to node, whose
// labels and name it has, and whose NoSchedule and NoExecute taints are
// taints.
func (s *Selection) admits(node *corev1.Node, taints []corev1.Taint) bool {
	if len(taints) > 0 {
		if _, untolerated := corev1helpers.FindMatchingUntoleratedTaint(taints, s.tolerations, nil); untolerated {
			return false
		}
	}
	if !s.selects {
		return true
	}
	for _, sel := range s.within {
		if ok, _ := sel.Match(node); !ok {
			return false
		}
	}
	ok, err := s.affinity.Match(node)
	return ok && err == nil // a term the API server let through and that does not parse selects nothing
}

// withExtendedResourceTolerations is spec's tolerations and those the
// ExtendedResourceToleration admission plugin adds: for each extended
// resource a container or init container asks for, in its requests or
// limits (a limit alone is its request), ordered by name.
func withExtendedResourceTolerations(spec *corev1.PodSpec) []corev1.Toleration {
	var names []string
	for _, cs := range [2][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range cs {
			for _, l := range [2]corev1.ResourceList{cs[i].Resources.Requests, cs[i].Resources.Limits} {
				for name := range l {
					if extended(name) && !slices.Contains(names, string(name)) {
						names = append(names, string(name))
					}
				}
			}
		}
	}
	if len(names) == 0 {
		return spec.Tolerations
	}
	slices.Sort(names)
	out := slices.Grow(slices.Clone(spec.Tolerations), len(names))
	for _, name := range names {
		out = append(out, corev1.Toleration{Key: name, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
	}
	return out
}

// extended reports whether name is an extended resource: one with a
// domain other than kubernetes.io's, not a quota's "requests." name (the
// API server's IsExtendedResourceName, less its validation).
func extended(name corev1.ResourceName) bool {
	s := string(name)
	return strings.Contains(s, "/") && !strings.Contains(s, corev1.ResourceDefaultNamespacePrefix) &&
		!strings.HasPrefix(s, corev1.DefaultResourceRequestsPrefix)
}

// schedulingTaints are the taints of n that keep pods that do not tolerate
// them off it: NoSchedule and NoExecute (PreferNoSchedule only weighs).
func schedulingTaints(taints []corev1.Taint) []corev1.Taint {
	var out []corev1.Taint
	for _, t := range taints {
		if t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute {
			out = append(out, t)
		}
	}
	return out
}
