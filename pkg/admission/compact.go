package admission

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unique"

	corev1 "k8s.io/api/core/v1"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
)

// UnitCompactor makes the QueueUnits an informer decoded cheaper to keep,
// and leaves each reading exactly as before. A decoder gives every list and
// every string of every object an allocation of its own:
//
//   - a unit's resource lists that list what another unit's do, written the
//     same way, become that unit's map: units of one job template, or of one
//     size, keep one list (about 700 bytes) between them. At most
//     maxSharedLists lists of at most maxSharedNames resources each are
//     kept to be shared, the first seen: past that, units keep their own;
//   - spec.request, and the resources of an admission, equal to
//     spec.resource (as the extensions write spec.request, and as a unit
//     without pod sets is admitted) become spec.resource's map;
//   - a unit's pod sets that read as another unit's (the same JSON) become
//     that unit's list: the cache keeps of each template only the pod's
//     request, so jobs of one template keep one list (a pod set is about
//     1,250 bytes as kept). At most maxSharedLists lists of at most
//     maxSharedNames pod sets, each list under maxPodSetsKey bytes of JSON;
//   - a unit's labels, or its annotations, that are another unit's, key for
//     key and value for value, become that unit's map: units of one quota
//     and one kind of job keep one map of labels (about 300 bytes for
//     three). The same bounds hold as for resource lists;
//   - the strings that units repeat (their namespace, label and annotation
//     keys and values, their owner's and consumer's kinds, pod set names,
//     conditions' types, reasons and messages, the status message) become
//     one copy each (unique.Make). unique keeps a string's one copy only
//     while some handle to it lives, and the units keep the string, not the
//     handle: the compactor keeps the handles of the last keptHandles
//     strings it shared, so a string that comes again within them stays one
//     copy across collections;
//   - lists (pod sets, conditions, admissions, owners) have no room to
//     spare: a decoder doubles a slice's room as it fills it, and a unit's
//     third condition or pod set would keep room for a fourth.
//
// A unit compacted must not be changed in place: an informer's objects
// never are (every writer changes a copy), and a copy (DeepCopy) has lists
// of its own again. Compacting a unit again, as a streamed list does (its
// objects pass the informer's transform twice), writes only the unit's own
// fields, never what it shares. Safe for concurrent use.
type UnitCompactor struct {
	mu sync.Mutex
	// lists to share, by what they list (listKey); at most max.
	lists map[string]corev1.ResourceList
	// labels (and annotations) to share, by what they hold (mapKey); at
	// most max.
	labels map[string]map[string]string
	// podSets to share, by their JSON; at most max. keptSets are their
	// first elements, to know a list kept when it comes again.
	podSets  map[string][]schedulingv1alpha1.PodSet
	keptSets map[*schedulingv1alpha1.PodSet]struct{}
	max      int
	// handles are the last keptHandles strings interned, a ring whose next
	// slot is next, under their own lock (shareMap interns under mu).
	handlesMu sync.Mutex
	handles   [keptHandles]unique.Handle[string]
	next      int
}

// Bounds of what a UnitCompactor keeps to share: tenants choose resource
// names and amounts, so the lists kept are few and small whatever they ask.
const (
	maxSharedLists = 4096
	maxSharedNames = 16
	maxPodSetsKey  = 4096
	// keptHandles covers the strings of about two thousand units (each
	// has about fifteen): the namespaces, labels and condition messages of
	// as many queues, interleaved as a list brings them. 256 KiB.
	keptHandles = 1 << 15
)

// NewUnitCompactor returns a UnitCompactor that shares nothing yet.
func NewUnitCompactor() *UnitCompactor {
	return &UnitCompactor{lists: map[string]corev1.ResourceList{}, labels: map[string]map[string]string{},
		podSets: map[string][]schedulingv1alpha1.PodSet{}, keptSets: map[*schedulingv1alpha1.PodSet]struct{}{}, max: maxSharedLists}
}

// Compact compacts u.
func (c *UnitCompactor) Compact(u *schedulingv1alpha1.QueueUnit) {
	spec, st := &u.Spec, &u.Status
	spec.Resource = c.share(spec.Resource)
	if sameList(spec.Request, spec.Resource) {
		spec.Request = spec.Resource
	} else {
		spec.Request = c.share(spec.Request)
	}
	for i := range st.Admissions {
		a := &st.Admissions[i]
		a.Name = c.intern(a.Name)
		if sameList(a.Resources, spec.Resource) {
			a.Resources = spec.Resource
		} else {
			a.Resources = c.share(a.Resources)
		}
	}

	u.OwnerReferences = clip(u.OwnerReferences)
	spec.PodSets = clip(spec.PodSets)
	st.Admissions = clip(st.Admissions)
	st.Conditions = clip(st.Conditions)
	st.AdmissionChecks = clip(st.AdmissionChecks)

	u.Namespace = c.intern(u.Namespace)
	u.Labels = c.shareMap(u.Labels)
	u.Annotations = c.shareMap(u.Annotations)
	for i := range u.OwnerReferences {
		o := &u.OwnerReferences[i]
		o.APIVersion, o.Kind = c.intern(o.APIVersion), c.intern(o.Kind)
	}
	if ref := spec.ConsumerRef; ref != nil {
		ref.APIVersion, ref.Kind, ref.Namespace = c.intern(ref.APIVersion), c.intern(ref.Kind), c.intern(ref.Namespace)
	}
	spec.Queue, spec.PriorityClassName = c.intern(spec.Queue), c.intern(spec.PriorityClassName)
	if !c.keptPodSets(spec.PodSets) { // compacted already: other units read it
		for i := range spec.PodSets {
			spec.PodSets[i].Name = c.intern(spec.PodSets[i].Name)
			pod := &spec.PodSets[i].Template.Spec
			for _, containers := range [][]corev1.Container{pod.Containers, pod.InitContainers} {
				for j := range containers {
					r := &containers[j].Resources
					r.Requests, r.Limits = c.share(r.Requests), c.share(r.Limits)
				}
			}
		}
		spec.PodSets = c.sharePodSets(spec.PodSets)
	}
	st.Message = c.intern(st.Message)
	for i := range st.Conditions {
		cond := &st.Conditions[i]
		cond.Type, cond.Reason, cond.Message = c.intern(cond.Type), c.intern(cond.Reason), c.intern(cond.Message)
	}
	for i := range st.AdmissionChecks {
		check := &st.AdmissionChecks[i]
		check.Name, check.Message = c.intern(check.Name), c.intern(check.Message)
	}
}

// FinishedStatus is what the Cache reads of a finished unit's status: its
// phase (it holds nothing and waits for nothing), its attempts (which end an
// admission whose finish a relist skipped), and how long it ran and what it
// held (the forecast learns them when it first sees the unit finished).
// The rest (conditions, messages, pod counts, admission checks) is a third
// of a finished harness unit's bytes, and no decision or view reads it. The
// Writer never writes the status of a unit whose latest copy is finished
// (nothing is decided for a unit out of the queues), so a copy cut down to
// FinishedStatus is never the base of a write that would drop the rest.
func FinishedStatus(st *schedulingv1alpha1.QueueUnitStatus) schedulingv1alpha1.QueueUnitStatus {
	return schedulingv1alpha1.QueueUnitStatus{
		Phase:            st.Phase,
		Attempts:         st.Attempts,
		LastUpdateTime:   st.LastUpdateTime,
		LastAllocateTime: st.LastAllocateTime,
		Admissions:       st.Admissions,
	}
}

// CutFinished cuts a finished unit's status to FinishedStatus, as the
// binary's cache keeps it; a unit not finished is left as it is.
func CutFinished(u *schedulingv1alpha1.QueueUnit) {
	if queueunit.Finished(u.EffectivePhase()) {
		u.Status = FinishedStatus(&u.Status)
	}
}

// share is a list kept to share that lists what list does, written the
// same way, or list, kept to share if there is room.
func (c *UnitCompactor) share(list corev1.ResourceList) corev1.ResourceList {
	if len(list) == 0 || len(list) > maxSharedNames {
		return list
	}
	key := listKey(list)
	c.mu.Lock()
	defer c.mu.Unlock()
	if kept, ok := c.lists[key]; ok && sameList(kept, list) {
		return kept
	}
	if len(c.lists) < c.max {
		c.lists[key] = list
	}
	return list
}

// keptPodSets reports whether sets is a list kept to share.
func (c *UnitCompactor) keptPodSets(sets []schedulingv1alpha1.PodSet) bool {
	if len(sets) == 0 {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.keptSets[&sets[0]]
	return ok
}

// sharePodSets is a list of pod sets kept to share that has sets' JSON, or
// sets, kept to share if there is room. Compact shares their lists and
// strings first, so the list kept shares them too.
func (c *UnitCompactor) sharePodSets(sets []schedulingv1alpha1.PodSet) []schedulingv1alpha1.PodSet {
	if len(sets) == 0 || len(sets) > maxSharedNames {
		return sets
	}
	data, err := json.Marshal(sets)
	if err != nil || len(data) > maxPodSetsKey {
		return sets
	}
	key := string(data)
	c.mu.Lock()
	defer c.mu.Unlock()
	if kept, ok := c.podSets[key]; ok {
		return kept
	}
	if len(c.podSets) < c.max {
		c.podSets[key] = sets
		c.keptSets[&sets[0]] = struct{}{}
	}
	return sets
}

// shareMap is a map kept to share that holds what m holds, or m interned
// (internMap), kept to share if there is room.
func (c *UnitCompactor) shareMap(m map[string]string) map[string]string {
	if len(m) == 0 || len(m) > maxSharedNames {
		return c.internMap(m)
	}
	key := mapKey(m)
	c.mu.Lock()
	defer c.mu.Unlock()
	if kept, ok := c.labels[key]; ok && maps.Equal(kept, m) {
		return kept
	}
	m = c.internMap(m)
	if len(c.labels) < c.max {
		c.labels[key] = m
	}
	return m
}

// mapKey is what m holds, each key and value prefixed by its length so that
// no two maps have one key. Keys and values are the tenant's: shareMap
// checks the map found besides.
func mapKey(m map[string]string) string {
	keys := slices.Sorted(maps.Keys(m))
	var b strings.Builder
	for _, k := range keys {
		for _, s := range []string{k, m[k]} {
			b.WriteString(strconv.Itoa(len(s)))
			b.WriteByte(':')
			b.WriteString(s)
		}
	}
	return b.String()
}

// listKey is what list lists, as each amount is written: lists that read
// the same (sameList) have one key. Names are the tenant's: share checks
// the list found besides.
func listKey(list corev1.ResourceList) string {
	names := make([]string, 0, len(list))
	for name := range list {
		names = append(names, string(name))
	}
	slices.Sort(names)
	var b strings.Builder
	for _, name := range names {
		q := list[corev1.ResourceName(name)]
		b.WriteString(strconv.Itoa(len(name)))
		b.WriteByte(':')
		b.WriteString(name)
		b.WriteByte('=')
		b.WriteString(q.String())
		b.WriteByte(';')
	}
	return b.String()
}

// sameList reports whether a and b, both set, list the same amounts
// written the same way: sharing one map for both then reads as the two did.
func sameList(a, b corev1.ResourceList) bool {
	if len(a) == 0 || len(a) != len(b) {
		return false
	}
	for name, qa := range a {
		qb, ok := b[name]
		if !ok || qa.Cmp(qb) != 0 || qa.String() != qb.String() {
			return false
		}
	}
	return true
}

// internMap is m with its keys and values interned: a map of the same size.
func (c *UnitCompactor) internMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return m
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[c.intern(k)] = c.intern(v)
	}
	return out
}

// clip is s in a slice with no room to spare.
func clip[S ~[]E, E any](s S) S {
	if len(s) == 0 || cap(s) == len(s) {
		return s
	}
	return append(make(S, 0, len(s)), s...)
}

// intern is s, sharing its bytes with every other string of its value
// interned while either is kept and its handle is among the last
// keptHandles.
func (c *UnitCompactor) intern(s string) string {
	if s == "" {
		return s
	}
	h := unique.Make(s)
	c.handlesMu.Lock()
	c.handles[c.next] = h
	c.next = (c.next + 1) % keptHandles
	c.handlesMu.Unlock()
	return h.Value()
}
