// Package topology decides where a pod set that asks for a topology level
// can run: within one domain of that level (a block, a rack, a host, as a
// Topology's node labels group the nodes) that has room for all of its pods
// at once, as Kueue's topology-aware scheduling does.
//
// It is pure decision code, like pkg/quota: no client, no clock, no
// goroutine. ParseAsk reads what a pod template asks (Kueue's annotations
// or koord-queue's); NewSnapshot builds, once per admission cycle, the
// domain tree of a Topology from the nodes and what their pods hold;
// Snapshot.Place finds a domain for each pod set of a unit and takes its
// room, so that the units tried after it in the same cycle see what is
// left; Snapshot.Assume takes the room of units admitted earlier whose
// pods are not placed yet. A placement becomes a node affinity with
// Levels.NodeSelector.
//
// Amounts are counted as the kube-scheduler counts them: milli-cores for
// cpu, whole units (bytes) for everything else.
package topology

import (
	"fmt"
	"strings"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
)

// The pod-template annotations through which a pod set asks for a level:
// the value is the node label of a level of the Topology in force. Kueue's
// keys are read as they are, so manifests written for Kueue work unchanged;
// koord-queue's say the same. Required: all the pod set's pods within one
// domain of that level, or the unit waits. Preferred: one domain of that
// level if one has room, else as few as fit. Setting both a Kueue key and
// koord-queue's with different values, or a required and a preferred
// level, is an error.
const (
	// AnnotationPodSetRequiredTopology on a pod template names the level
	// (a node label of the Topology) all its pods must run within one
	// domain of.
	AnnotationPodSetRequiredTopology = "koord-queue/podset-required-topology"
	// AnnotationPodSetPreferredTopology on a pod template names the level
	// its pods should run within one domain of, when one has room.
	AnnotationPodSetPreferredTopology = "koord-queue/podset-preferred-topology"
	// AnnotationPodSetRequiredTopologyKueue is Kueue's key for
	// AnnotationPodSetRequiredTopology.
	AnnotationPodSetRequiredTopologyKueue = "kueue.x-k8s.io/podset-required-topology"
	// AnnotationPodSetPreferredTopologyKueue is Kueue's key for
	// AnnotationPodSetPreferredTopology.
	AnnotationPodSetPreferredTopologyKueue = "kueue.x-k8s.io/podset-preferred-topology"
)

// maxLabelKey is the longest a node label key may be, as the Topology
// CRD's nodeLabel allows (Kueue's bound).
const maxLabelKey = 316

// Ask is the level a pod set asks for. The zero Ask asks for none.
type Ask struct {
	// Level is the node label of the level asked for.
	Level string
	// Required: within one domain of Level or not at all. Otherwise
	// preferred.
	Required bool
	// Key is the annotation the level was read from, for messages.
	Key string
}

// IsZero reports whether the pod set asks for no level.
func (a Ask) IsZero() bool { return a.Level == "" }

// ParseAsk reads the level a pod template's annotations ask for. It
// refuses a value that no node label key could be, two keys of one kind
// (Kueue's and koord-queue's) with different values, and a required level
// together with a preferred one.
func ParseAsk(annotations map[string]string) (Ask, error) {
	required, err := pair(annotations, AnnotationPodSetRequiredTopologyKueue, AnnotationPodSetRequiredTopology)
	if err != nil {
		return Ask{}, err
	}
	preferred, err := pair(annotations, AnnotationPodSetPreferredTopologyKueue, AnnotationPodSetPreferredTopology)
	if err != nil {
		return Ask{}, err
	}
	switch {
	case required.Level != "" && preferred.Level != "":
		return Ask{}, fmt.Errorf("%s and %s are both set: a pod set asks for a required or a preferred topology level, not both",
			required.Key, preferred.Key)
	case required.Level != "":
		required.Required = true
		return required, nil
	default:
		return preferred, nil
	}
}

// AskAnnotations are the annotations of a pod template that ParseAsk
// reads, nil when it has none: what a cache that drops the rest of a
// template keeps. A value longer than a node label key is kept cut to one
// character more, which ParseAsk still refuses, so that a tenant's long
// value costs the cache no more than that.
func AskAnnotations(annotations map[string]string) map[string]string {
	var out map[string]string
	for _, key := range [4]string{AnnotationPodSetRequiredTopologyKueue, AnnotationPodSetRequiredTopology,
		AnnotationPodSetPreferredTopologyKueue, AnnotationPodSetPreferredTopology} {
		v, ok := annotations[key]
		if !ok {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[key] = v[:min(len(v), maxLabelKey+1)]
	}
	return out
}

// pair reads one kind of ask from its Kueue key and koord-queue's key.
func pair(annotations map[string]string, kueueKey, ownKey string) (Ask, error) {
	theirs, hasTheirs := annotations[kueueKey]
	ours, hasOurs := annotations[ownKey]
	for _, key := range [2]string{kueueKey, ownKey} {
		v, set := annotations[key]
		if !set {
			continue
		}
		if v == "" {
			return Ask{}, fmt.Errorf("%s is empty: it names the node label of a topology level", key)
		}
		if len(v) > maxLabelKey {
			return Ask{}, fmt.Errorf("%s is longer than %d characters, the most a node label key has", key, maxLabelKey)
		}
	}
	switch {
	case hasTheirs && hasOurs && theirs != ours:
		return Ask{}, fmt.Errorf("%s is %s but %s is %s: set one, or both to the same level",
			kueueKey, quote(theirs), ownKey, quote(ours))
	case hasOurs:
		return Ask{Level: ours, Key: ownKey}, nil
	case hasTheirs:
		return Ask{Level: theirs, Key: kueueKey}, nil
	}
	return Ask{}, nil
}

// quote renders a tenant's value for a message, cut to a readable length.
func quote(s string) string {
	const most = 64
	if len(s) > most {
		return fmt.Sprintf("%q…", s[:most])
	}
	return fmt.Sprintf("%q", s)
}

// Levels are a Topology's node labels, broadest first.
type Levels struct {
	// Topology is the Topology's name, for messages.
	Topology string
	Labels   []string
}

// LevelsOf is t's levels.
func LevelsOf(t *schedulingv1alpha1.Topology) Levels {
	l := Levels{Topology: t.Name, Labels: make([]string, len(t.Spec.Levels))}
	for i, level := range t.Spec.Levels {
		l.Labels[i] = level.NodeLabel
	}
	return l
}

// Index is the index of the level whose node label is label, -1 if none.
func (l Levels) Index(label string) int {
	for i, have := range l.Labels {
		if have == label {
			return i
		}
	}
	return -1
}

// Resolve is the index of the level a asks for; an error, naming the
// label and l's levels, when l has no such level.
func (l Levels) Resolve(a Ask) (int, error) {
	if i := l.Index(a.Level); i >= 0 {
		return i, nil
	}
	key := a.Key
	if key == "" {
		key = "the pod set"
	}
	return -1, fmt.Errorf("%s asks for topology level %s, which topology %q does not have: its levels are %s",
		key, quote(a.Level), l.Topology, strings.Join(l.Labels, ", "))
}
