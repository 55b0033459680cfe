package admission

import (
	"encoding/json"
	"maps"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	qt "github.com/koord-queue/koord-queue/pkg/quota/quotatest"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
)

// TestCompactUnitReadsTheSame: a unit compacted as the informer decoded it
// is equal to the unit decoded, field by field; its resource lists equal
// to spec.resource share spec.resource's map and the others keep their
// own; two units decoded apart share their lists and their repeated
// strings; and a copy of a compacted unit can be changed without changing
// it.
func TestCompactUnitReadsTheSame(t *testing.T) {
	at := metav1.NewTime(time.Unix(1_000_000, 0))
	resized := harnessUnit(1)
	admittedStatus(resized, at)
	resized.Spec.Resource, resized.Spec.Request = qt.Res("cpu", "2"), qt.Res("cpu", "2")
	otherwise := harnessUnit(2)
	otherwise.Spec.Resource = qt.Res("cpu", "1", "memory", "1Ki")
	otherwise.Spec.Request = qt.Res("cpu", "1", "memory", "1024") // the same amounts, written otherwise
	job := func(i int, set func(*schedulingv1alpha1.QueueUnit, metav1.Time)) *schedulingv1alpha1.QueueUnit {
		u := jobUnit(i)
		set(u, at)
		u.Status.Admissions[0].Resources = qt.Res("cpu", "1", "memory", "4Gi")
		u.Status.Admissions[1].Resources = qt.Res("cpu", "16", "memory", "64Gi", "nvidia.com/gpu", "4")
		return u
	}
	partial := job(3, admittedStatus)
	partial.Status.Admissions[1].Replicas = 2
	partial.Status.Admissions[1].Resources = qt.Res("cpu", "8", "memory", "32Gi", "nvidia.com/gpu", "2")
	for _, tc := range []struct {
		name string
		unit *schedulingv1alpha1.QueueUnit
		// wantShared: spec.request, then each admission's resources, is
		// spec.resource's map.
		wantShared []bool
	}{{
		name:       "a harness unit waiting: spec.request is spec.resource",
		unit:       func() *schedulingv1alpha1.QueueUnit { u := harnessUnit(0); waitingStatus(u, at); return u }(),
		wantShared: []bool{true},
	}, {
		name:       "a harness unit admitted: so is its admission's",
		unit:       func() *schedulingv1alpha1.QueueUnit { u := harnessUnit(0); admittedStatus(u, at); return u }(),
		wantShared: []bool{true, true},
	}, {
		name:       "a unit resized since admitted keeps the admission's resources",
		unit:       resized,
		wantShared: []bool{true, false},
	}, {
		name:       "a request written otherwise than the resource is kept",
		unit:       otherwise,
		wantShared: []bool{false},
	}, {
		name:       "a job's pod sets each hold their own share",
		unit:       job(0, admittedStatus),
		wantShared: []bool{true, false, false},
	}, {
		name:       "a partial admission",
		unit:       partial,
		wantShared: []bool{true, false, false},
	}, {
		name: "three pod sets, admitted: three conditions",
		unit: func() *schedulingv1alpha1.QueueUnit {
			u := jobUnit(4)
			u.Spec.PodSets = append(u.Spec.PodSets, schedulingv1alpha1.PodSet{Name: "evaluator", Count: 1})
			admittedStatus(u, at)
			return u
		}(),
		wantShared: []bool{true, false, false, false},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			data, err := json.Marshal(tc.unit)
			if err != nil {
				t.Fatal(err)
			}
			decode := func() *schedulingv1alpha1.QueueUnit {
				u := &schedulingv1alpha1.QueueUnit{}
				if err := json.Unmarshal(data, u); err != nil {
					t.Fatal(err)
				}
				return u
			}
			want, got, other := decode(), decode(), decode()
			compactor := NewUnitCompactor()
			compactor.Compact(got)
			compactor.Compact(other)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("compacted unit (-decoded +compacted):\n%s", diff)
			}
			shared := []bool{sameMap(got.Spec.Request, got.Spec.Resource)}
			for _, a := range got.Status.Admissions {
				shared = append(shared, sameMap(a.Resources, got.Spec.Resource))
			}
			if diff := cmp.Diff(tc.wantShared, shared); diff != "" {
				t.Errorf("lists sharing spec.resource's map (-want +got):\n%s", diff)
			}
			if !sameMap(got.Spec.Resource, other.Spec.Resource) || !sameMap(got.Spec.Request, other.Spec.Request) {
				t.Error("two units asking for the same keep a list each")
			}
			for i := range got.Status.Admissions {
				if a, b := got.Status.Admissions[i].Resources, other.Status.Admissions[i].Resources; len(a) > 0 && !sameMap(a, b) {
					t.Errorf("admission %d: two units holding the same keep a list each", i)
				}
			}
			for what, pair := range map[string][2]string{
				"namespace": {got.Namespace, other.Namespace},
				"message":   {got.Status.Message, other.Status.Message},
			} {
				if unsafe.StringData(pair[0]) != unsafe.StringData(pair[1]) {
					t.Errorf("%s %q: two copies", what, pair[0])
				}
			}
			for k := range got.Labels {
				for k2 := range other.Labels {
					if k == k2 && unsafe.StringData(k) != unsafe.StringData(k2) {
						t.Errorf("label key %q: two copies", k)
					}
				}
			}

			for what, lens := range map[string][2]int{
				"pod sets":   {len(got.Spec.PodSets), cap(got.Spec.PodSets)},
				"conditions": {len(got.Status.Conditions), cap(got.Status.Conditions)},
				"admissions": {len(got.Status.Admissions), cap(got.Status.Admissions)},
				"owners":     {len(got.OwnerReferences), cap(got.OwnerReferences)},
			} {
				if lens[1] > lens[0] {
					t.Errorf("%d %s kept in room for %d", lens[0], what, lens[1])
				}
			}

			cp := got.DeepCopy()
			cp.Spec.Request["cpu"] = resource.MustParse("99")
			for i := range cp.Status.Admissions {
				if cp.Status.Admissions[i].Resources != nil {
					cp.Status.Admissions[i].Resources["cpu"] = resource.MustParse("98")
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("changing a copy changed the unit (-before +after):\n%s", diff)
			}
		})
	}
}

// sameMap reports whether a and b are one map.
func sameMap[M ~map[K]V, K comparable, V any](a, b M) bool {
	return a != nil && reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// TestCompactedStringsStayOneCopyAcrossCollections: unique.Make alone
// keeps a string's one copy only while a handle to it lives, and the units
// keep strings: a collection between two units would give the second its
// own copies of the namespace, the labels and the messages it repeats.
func TestCompactedStringsStayOneCopyAcrossCollections(t *testing.T) {
	at := metav1.NewTime(time.Unix(1_000_000, 0))
	data, err := json.Marshal(func() *schedulingv1alpha1.QueueUnit { u := harnessUnit(7); admittedStatus(u, at); return u }())
	if err != nil {
		t.Fatal(err)
	}
	compactor := NewUnitCompactor()
	var units []*schedulingv1alpha1.QueueUnit
	for range 2 {
		u := &schedulingv1alpha1.QueueUnit{}
		if err := json.Unmarshal(data, u); err != nil {
			t.Fatal(err)
		}
		compactor.Compact(u)
		units = append(units, u)
		runtime.GC()
		runtime.GC() // the second collection frees what the first found unreachable
	}
	first, second := units[0], units[1]
	pairs := map[string][2]string{
		"namespace":         {first.Namespace, second.Namespace},
		"status message":    {first.Status.Message, second.Status.Message},
		"condition message": {first.Status.Conditions[0].Message, second.Status.Conditions[0].Message},
	}
	for i := range first.Status.Admissions {
		pairs["admission "+strconv.Itoa(i)] = [2]string{first.Status.Admissions[i].Name, second.Status.Admissions[i].Name}
	}
	for what, pair := range pairs {
		if pair[0] == "" {
			t.Fatalf("%s: empty in the test's unit", what)
		}
		if unsafe.StringData(pair[0]) != unsafe.StringData(pair[1]) {
			t.Errorf("%s %q: two copies", what, pair[0])
		}
	}
}

// TestCompactorSharesOnlyWhatReadsTheSame: a unit is given another unit's
// list only when it lists the same amounts, written the same way, however
// its resources are named; and past its bound a compactor keeps no more
// lists to share.
func TestCompactorSharesOnlyWhatReadsTheSame(t *testing.T) {
	for _, tc := range []struct {
		name        string
		first, then corev1.ResourceList
		wantShared  bool
	}{
		{name: "the same", first: qt.Res("cpu", "1", "memory", "1Gi"), then: qt.Res("memory", "1Gi", "cpu", "1"), wantShared: true},
		{name: "another amount", first: qt.Res("cpu", "1"), then: qt.Res("cpu", "2")},
		{name: "one resource more", first: qt.Res("cpu", "1"), then: qt.Res("cpu", "1", "memory", "1")},
		{name: "written otherwise", first: qt.Res("memory", "1Ki"), then: qt.Res("memory", "1024")},
		{name: "a name that spells another list", first: qt.Res("1:a=1;1:b", "1"), then: qt.Res("a", "1", "b", "1")},
		{name: "names that spell each other's", first: qt.Res("a=1;1:b", "1"), then: qt.Res("a", "1", "b", "1")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewUnitCompactor()
			first := harnessUnit(0)
			first.Spec.Resource = tc.first
			c.Compact(first)
			then := harnessUnit(1)
			then.Spec.Resource = tc.then
			want := then.Spec.Resource.DeepCopy()
			c.Compact(then)
			if got := sameMap(first.Spec.Resource, then.Spec.Resource); got != tc.wantShared {
				t.Errorf("shared: %v, want %v", got, tc.wantShared)
			}
			if diff := cmp.Diff(want, then.Spec.Resource); diff != "" {
				t.Errorf("spec.resource (-want +got):\n%s", diff)
			}
		})
	}

	c := &UnitCompactor{lists: map[string]corev1.ResourceList{}, labels: map[string]map[string]string{}, podSets: map[string][]schedulingv1alpha1.PodSet{}, keptSets: map[*schedulingv1alpha1.PodSet]struct{}{}, max: 2}
	var units []*schedulingv1alpha1.QueueUnit
	for i := range 4 {
		u := harnessUnit(i)
		u.Spec.Resource = qt.Res("cpu", strconv.Itoa(i+1))
		c.Compact(u)
		units = append(units, u)
	}
	if len(c.lists) != 2 {
		t.Errorf("%d lists kept to share, want at most 2", len(c.lists))
	}
	u := harnessUnit(9)
	u.Spec.Resource = qt.Res("cpu", "2")
	c.Compact(u)
	if !sameMap(u.Spec.Resource, units[1].Spec.Resource) {
		t.Error("a list kept is not shared")
	}
}

// TestCompactorSharesLabelsOnlyWhenTheSame: a unit is given another unit's
// labels (or annotations) only when they hold the same keys and values,
// however a tenant spells them; past its bound a compactor keeps no more.
func TestCompactorSharesLabelsOnlyWhenTheSame(t *testing.T) {
	for _, tc := range []struct {
		name        string
		first, then map[string]string
		wantShared  bool
	}{
		{name: "the same", first: map[string]string{"team": "a", "class": "small"}, then: map[string]string{"class": "small", "team": "a"}, wantShared: true},
		{name: "another value", first: map[string]string{"team": "a"}, then: map[string]string{"team": "b"}},
		{name: "one label more", first: map[string]string{"team": "a"}, then: map[string]string{"team": "a", "x": ""}},
		{name: "an empty value and a missing key", first: map[string]string{"a": "", "b": "1"}, then: map[string]string{"b": "1", "c": ""}},
		{name: "a key that spells two labels", first: map[string]string{"1:a1:b1:c": "d"}, then: map[string]string{"a": "b", "c": "d"}},
		{name: "a value that spells the next label", first: map[string]string{"a": "b1:c1:d"}, then: map[string]string{"a": "b", "c": "d"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewUnitCompactor()
			first, then := harnessUnit(0), harnessUnit(1)
			first.Labels, first.Annotations = maps.Clone(tc.first), maps.Clone(tc.first)
			then.Labels, then.Annotations = maps.Clone(tc.then), maps.Clone(tc.then)
			c.Compact(first)
			c.Compact(then)
			if got := sameMap(first.Labels, then.Labels); got != tc.wantShared {
				t.Errorf("labels shared: %v, want %v", got, tc.wantShared)
			}
			if got := sameMap(first.Annotations, then.Annotations); got != tc.wantShared {
				t.Errorf("annotations shared: %v, want %v", got, tc.wantShared)
			}
			if diff := cmp.Diff(tc.then, then.Labels); diff != "" {
				t.Errorf("labels (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.first, first.Annotations); diff != "" {
				t.Errorf("the first unit's annotations (-want +got):\n%s", diff)
			}
		})
	}

	c := &UnitCompactor{lists: map[string]corev1.ResourceList{}, labels: map[string]map[string]string{}, podSets: map[string][]schedulingv1alpha1.PodSet{}, keptSets: map[*schedulingv1alpha1.PodSet]struct{}{}, max: 2}
	var units []*schedulingv1alpha1.QueueUnit
	for i := range 4 {
		u := harnessUnit(i)
		u.Labels, u.Annotations = map[string]string{"n": strconv.Itoa(i)}, nil
		c.Compact(u)
		units = append(units, u)
	}
	if len(c.labels) != 2 {
		t.Errorf("%d label maps kept to share, want at most 2", len(c.labels))
	}
	u := harnessUnit(9)
	u.Labels = map[string]string{"n": "1"}
	c.Compact(u)
	if !sameMap(u.Labels, units[1].Labels) {
		t.Error("a label map kept is not shared")
	}
}

// TestCompactorSharesPodSetsOnlyWhenTheSame: a unit is given another unit's
// pod sets only when they read the same, field for field and amount for
// amount as written; past its bound a compactor keeps no more.
func TestCompactorSharesPodSetsOnlyWhenTheSame(t *testing.T) {
	sets := func(count int32, minCount *int32, memory string) []schedulingv1alpha1.PodSet {
		return []schedulingv1alpha1.PodSet{
			{Name: "master", Count: 1, Template: wrappers.PodTemplate("cpu", "1")},
			{Name: "worker", Count: count, MinCount: minCount, Template: wrappers.PodTemplate("memory", memory, "nvidia.com/gpu", "1")},
		}
	}
	for _, tc := range []struct {
		name        string
		first, then []schedulingv1alpha1.PodSet
		wantShared  bool
	}{
		{name: "the same", first: sets(4, nil, "1Ki"), then: sets(4, nil, "1Ki"), wantShared: true},
		{name: "another count", first: sets(4, nil, "1Ki"), then: sets(8, nil, "1Ki")},
		{name: "a min count", first: sets(4, nil, "1Ki"), then: sets(4, ptr.To[int32](2), "1Ki")},
		{name: "another request", first: sets(4, nil, "1Ki"), then: sets(4, nil, "2Ki")},
		{name: "written otherwise", first: sets(4, nil, "1Ki"), then: sets(4, nil, "1024")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewUnitCompactor()
			first, then := harnessUnit(0), harnessUnit(1)
			first.Spec.PodSets, then.Spec.PodSets = tc.first, tc.then
			want := slices.Clone(tc.then)
			c.Compact(first)
			c.Compact(then)
			if got := unsafe.SliceData(first.Spec.PodSets) == unsafe.SliceData(then.Spec.PodSets); got != tc.wantShared {
				t.Errorf("pod sets shared: %v, want %v", got, tc.wantShared)
			}
			if diff := cmp.Diff(want, then.Spec.PodSets); diff != "" {
				t.Errorf("pod sets (-want +got):\n%s", diff)
			}
		})
	}

	c := &UnitCompactor{lists: map[string]corev1.ResourceList{}, labels: map[string]map[string]string{}, podSets: map[string][]schedulingv1alpha1.PodSet{}, keptSets: map[*schedulingv1alpha1.PodSet]struct{}{}, max: 2}
	var units []*schedulingv1alpha1.QueueUnit
	for i := range 4 {
		u := harnessUnit(i)
		u.Spec.PodSets = sets(int32(i+1), nil, "1Ki")
		c.Compact(u)
		units = append(units, u)
	}
	if len(c.podSets) != 2 {
		t.Errorf("%d pod set lists kept to share, want at most 2", len(c.podSets))
	}
	u := harnessUnit(9)
	u.Spec.PodSets = sets(2, nil, "1Ki")
	c.Compact(u)
	if unsafe.SliceData(u.Spec.PodSets) != unsafe.SliceData(units[1].Spec.PodSets) {
		t.Error("a pod set list kept is not shared")
	}
}

// TestCompactingAgainWritesNothingShared: a unit compacted again whose pod
// sets are a list kept to share (a streamed list's second pass) leaves the
// list as it is, while other units read it: run with -race.
func TestCompactingAgainWritesNothingShared(t *testing.T) {
	c := NewUnitCompactor()
	first := harnessUnit(0)
	first.Spec.PodSets = []schedulingv1alpha1.PodSet{{Name: "main", Count: 2, Template: wrappers.PodTemplate("cpu", "1")}}
	c.Compact(first)
	again := harnessUnit(1)
	again.Spec.PodSets = first.Spec.PodSets
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 1000 {
			for _, ps := range first.Spec.PodSets {
				_, _ = ps.Name, ps.Template.Spec.Containers[0].Resources.Requests.Cpu()
			}
		}
	}()
	c.Compact(again)
	<-done
	if unsafe.SliceData(again.Spec.PodSets) != unsafe.SliceData(first.Spec.PodSets) {
		t.Error("the kept pod sets are no longer shared")
	}
}
