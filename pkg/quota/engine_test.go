package quota_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/quota"
	qt "github.com/koord-queue/koord-queue/pkg/quota/quotatest"
)

type charge struct {
	key, quota string
	req        corev1.ResourceList
	priority   int32
	admitted   time.Duration
	// hold: a reservation, not an admitted unit (Charge.Hold).
	hold bool
}

func newEngine(t *testing.T, capacity corev1.ResourceList, specs []quota.Spec, charges []charge) *quota.Engine {
	t.Helper()
	e := quota.NewEngine()
	if capacity != nil {
		e.SetClusterCapacity(capacity)
	}
	for _, s := range specs {
		e.UpsertQuota(s)
	}
	for _, c := range charges {
		if err := e.Charge(quota.Charge{Key: c.key, Quota: c.quota, Request: e.Vector(c.req), Priority: c.priority,
			AdmitTime: time.Unix(0, 0).Add(c.admitted), Hold: c.hold}); err != nil {
			t.Fatalf("Charge(%s): %v", c.key, err)
		}
	}
	return e
}

// str renders a ResourceList compactly for comparisons.
func str(l corev1.ResourceList) map[string]string {
	out := map[string]string{}
	for n, q := range l {
		out[string(n)] = q.String()
	}
	return out
}

func TestExplain(t *testing.T) {
	cases := []struct {
		name    string
		cap     corev1.ResourceList
		specs   []quota.Spec
		charges []charge
		quota   string
		req     corev1.ResourceList
		want    string
	}{
		{
			name:  "a request within every limit fits",
			cap:   qt.Res("cpu", "8"),
			specs: []quota.Spec{qt.MakeSpec("a").Max("cpu", "4").Obj()},
			quota: "a",
			req:   qt.Res("cpu", "4"),
			want:  "",
		},
		{
			name:    "the quota's own max",
			cap:     qt.Res("cpu", "8", "memory", "64Gi"),
			specs:   []quota.Spec{qt.MakeSpec("team-a").Max("cpu", "4", "memory", "8Gi").Obj()},
			charges: []charge{{key: "u1", quota: "team-a", req: qt.Res("cpu", "4", "memory", "8Gi")}},
			quota:   "team-a",
			req:     qt.Res("cpu", "4", "memory", "8Gi"),
			want:    "team-a: cpu 4 used of max 4, request 4; memory 8Gi used of max 8Gi, request 8Gi",
		},
		{
			name:    "only the resources asked for are checked",
			cap:     qt.Res("cpu", "8", "memory", "64Gi"),
			specs:   []quota.Spec{qt.MakeSpec("a").Max("cpu", "4", "memory", "8Gi").Obj()},
			charges: []charge{{key: "u1", quota: "a", req: qt.Res("memory", "8Gi")}},
			quota:   "a",
			req:     qt.Res("cpu", "1"),
			want:    "",
		},
		{
			name:  "an ancestor's max",
			cap:   qt.Res("cpu", "100"),
			specs: []quota.Spec{qt.MakeSpec("org").IsParent().Max("cpu", "6").Obj(), qt.MakeSpec("a").Parent("org").Max("cpu", "6").Obj(), qt.MakeSpec("b").Parent("org").Obj()},
			charges: []charge{
				{key: "u1", quota: "b", req: qt.Res("cpu", "5")},
			},
			quota: "a",
			req:   qt.Res("cpu", "2"),
			want:  "org: cpu 5 used of max 6, request 2",
		},
		{
			name:    "the cluster's capacity",
			cap:     qt.Res("cpu", "8"),
			specs:   []quota.Spec{qt.MakeSpec("a").Obj(), qt.MakeSpec("b").Obj()},
			charges: []charge{{key: "u1", quota: "b", req: qt.Res("cpu", "7")}},
			quota:   "a",
			req:     qt.Res("cpu", "2"),
			want:    "cluster: cpu 7 used of capacity 8, request 2",
		},
		{
			name:  "a resource a quota names and the cluster does not have",
			cap:   qt.Res("cpu", "8"),
			specs: []quota.Spec{qt.MakeSpec("a").Max("cpu", "4", "nvidia.com/gpu", "2").Obj()},
			quota: "a",
			req:   qt.Res("nvidia.com/gpu", "1"),
			want:  "request nvidia.com/gpu 1 exceeds the cluster's capacity 0: it cannot be admitted until the cluster grows",
		},
		{
			name:  "a resource neither a quota nor the cluster names is not limited",
			cap:   qt.Res("cpu", "8"),
			specs: []quota.Spec{qt.MakeSpec("a").Obj()},
			quota: "a",
			req:   qt.Res("nvidia.com/gpu", "1"),
			want:  "",
		},
		{
			name:    "more than the quota's max can never fit, however free it is",
			cap:     qt.Res("cpu", "100"),
			specs:   []quota.Spec{qt.MakeSpec("team-a").Max("cpu", "4").Obj()},
			charges: []charge{{key: "u1", quota: "team-a", req: qt.Res("cpu", "4")}},
			quota:   "team-a",
			req:     qt.Res("cpu", "5"),
			want:    "request cpu 5 exceeds max 4 of team-a: it can never be admitted",
		},
		{
			name:  "more than an ancestor's max can never fit",
			cap:   qt.Res("cpu", "100", "memory", "1Ti"),
			specs: []quota.Spec{qt.MakeSpec("org").IsParent().Max("cpu", "6", "memory", "8Gi").Obj(), qt.MakeSpec("a").Parent("org").Obj()},
			quota: "a",
			req:   qt.Res("cpu", "8", "memory", "16Gi"),
			want:  "request cpu 8 exceeds max 6 of org; memory 16Gi exceeds max 8Gi of org: it can never be admitted",
		},
		{
			name:  "more than the cluster has waits for the cluster to grow",
			cap:   qt.Res("cpu", "8"),
			specs: []quota.Spec{qt.MakeSpec("a").Obj()},
			quota: "a",
			req:   qt.Res("cpu", "9"),
			want:  "request cpu 9 exceeds the cluster's capacity 8: it cannot be admitted until the cluster grows",
		},
		{
			name:  "unknown capacity is unlimited",
			specs: []quota.Spec{qt.MakeSpec("a").Obj()},
			quota: "a",
			req:   qt.Res("cpu", "1000"),
			want:  "",
		},
		{
			name: "a sibling's idle min that it does not lend",
			cap:  qt.Res("cpu", "10"),
			specs: []quota.Spec{
				qt.MakeSpec("keeper").Min("cpu", "4").Max("cpu", "10").NoLending().Obj(),
				qt.MakeSpec("a").Obj(),
			},
			charges: []charge{{key: "u1", quota: "keeper", req: qt.Res("cpu", "1")}},
			quota:   "a",
			req:     qt.Res("cpu", "7"),
			want:    "cluster: cpu 1 used (+3 kept for quotas that do not lend) of capacity 10, request 7",
		},
		{
			name: "an idle min that does not lend, deep in a lending parent, stays kept",
			cap:  qt.Res("cpu", "10"),
			specs: []quota.Spec{
				qt.MakeSpec("p").IsParent().Min("cpu", "4").Max("cpu", "10").Obj(),
				qt.MakeSpec("keeper").Parent("p").Min("cpu", "4").Max("cpu", "10").NoLending().Obj(),
				qt.MakeSpec("a").Obj(),
			},
			quota: "a",
			req:   qt.Res("cpu", "7"),
			want:  "cluster: cpu 0 used (+4 kept for quotas that do not lend) of capacity 10, request 7",
		},
		{
			name:  "an unknown quota",
			specs: []quota.Spec{},
			quota: "ghost",
			req:   qt.Res("cpu", "1"),
			want:  `quota "ghost": no such ElasticQuota`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(t, tc.cap, tc.specs, tc.charges)
			got := e.Explain(tc.quota, e.Vector(tc.req))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Explain (-want +got):\n%s", diff)
			}
			if tc.quota == "ghost" {
				return
			}
			free, _, err := e.Headroom(tc.quota, nil, nil)
			if err != nil {
				t.Fatalf("Headroom: %v", err)
			}
			if gotFits := quota.Fits(e.Vector(tc.req), free); gotFits != (tc.want == "") {
				t.Errorf("Fits = %v, Explain = %q: they disagree", gotFits, got)
			}
		})
	}
}

func TestHeadroomNamesTheBindingQuota(t *testing.T) {
	e := newEngine(t, qt.Res("cpu", "10", "memory", "10Gi"), []quota.Spec{
		qt.MakeSpec("org").IsParent().Max("cpu", "6").Obj(),
		qt.MakeSpec("a").Parent("org").Max("memory", "1Gi").Obj(),
	}, nil)
	free, binding, err := e.Headroom("a", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = free
	got := map[string]string{}
	for _, name := range []string{"cpu", "memory"} {
		for i, a := range e.Vector(qt.Res(name, "1")) {
			if a != 0 {
				got[name] = binding[i]
			}
		}
	}
	want := map[string]string{"cpu": "org", "memory": "a"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("binding (-want +got):\n%s", diff)
	}
}

func TestUsageCountsAlongTheChainUntilReleased(t *testing.T) {
	e := newEngine(t, qt.Res("cpu", "10"), []quota.Spec{
		qt.MakeSpec("org").IsParent().Obj(),
		qt.MakeSpec("a").Parent("org").Obj(),
	}, []charge{{key: "u1", quota: "a", req: qt.Res("cpu", "3")}})
	want := map[string]string{"cpu": "3"}
	for _, q := range []string{"a", "org", elasticquotav1alpha1.RootQuotaName} {
		if diff := cmp.Diff(want, str(e.Used(q))); diff != "" {
			t.Errorf("Used(%s) (-want +got):\n%s", q, diff)
		}
	}
	if err := e.Charge(quota.Charge{Key: "u1", Quota: "a", Request: e.Vector(qt.Res("cpu", "1"))}); !errors.Is(err, quota.ErrAlreadyCharged) {
		t.Errorf("charging u1 twice: err = %v, want ErrAlreadyCharged", err)
	}
	if !e.Release("u1") || e.Release("u1") {
		t.Errorf("Release should succeed once")
	}
	if diff := cmp.Diff(map[string]string{}, str(e.Used("org"))); diff != "" {
		t.Errorf("Used(org) after release (-want +got):\n%s", diff)
	}
}

func TestResizeMovesUsageAlongTheChain(t *testing.T) {
	e := newEngine(t, qt.Res("cpu", "10", "memory", "10Gi"), []quota.Spec{
		qt.MakeSpec("org").IsParent().Obj(),
		qt.MakeSpec("a").Parent("org").Obj(),
	}, []charge{{key: "u1", quota: "a", req: qt.Res("cpu", "3"), priority: 4, admitted: time.Minute}})
	before, _ := e.Charged("u1")
	if err := e.Resize("u1", e.Vector(qt.Res("cpu", "5", "memory", "1Gi"))); err != nil {
		t.Fatalf("Resize(u1): %v", err)
	}
	want := map[string]string{"cpu": "5", "memory": "1Gi"}
	for _, q := range []string{"a", "org", elasticquotav1alpha1.RootQuotaName} {
		if diff := cmp.Diff(want, str(e.Used(q))); diff != "" {
			t.Errorf("Used(%s) after Resize (-want +got):\n%s", q, diff)
		}
	}
	after, _ := e.Charged("u1")
	if after.Quota != "a" || after.Priority != 4 || !after.AdmitTime.Equal(before.AdmitTime) {
		t.Errorf("Resize changed more than the request: %+v, was %+v", after, before)
	}
	if diff := cmp.Diff(map[string]string{"cpu": "3"}, str(e.ResourceList(before.Request))); diff != "" {
		t.Errorf("a Charge returned before Resize changed (-want +got):\n%s", diff)
	}
	if err := e.Resize("u2", e.Vector(qt.Res("cpu", "1"))); !errors.Is(err, quota.ErrNotCharged) {
		t.Errorf("Resize(u2), never charged: err = %v, want ErrNotCharged", err)
	}
	if diff := cmp.Diff(want, str(e.Used("org"))); diff != "" {
		t.Errorf("Used(org) after a failed Resize (-want +got):\n%s", diff)
	}
	e.Release("u1")
	if diff := cmp.Diff(map[string]string{}, str(e.Used(elasticquotav1alpha1.RootQuotaName))); diff != "" {
		t.Errorf("Used after release (-want +got):\n%s", diff)
	}
}

func TestTreeErrors(t *testing.T) {
	cases := []struct {
		name  string
		specs []quota.Spec
		want  map[string]error
	}{
		{
			name:  "missing parent",
			specs: []quota.Spec{qt.MakeSpec("a").IsParent().Parent("ghost").Obj(), qt.MakeSpec("b").Parent("a").Obj()},
			want:  map[string]error{"a": quota.ErrMissingParent, "b": quota.ErrInvalidAncestor},
		},
		{
			name: "cycle",
			specs: []quota.Spec{
				qt.MakeSpec("a").IsParent().Parent("c").Obj(), qt.MakeSpec("b").IsParent().Parent("a").Obj(), qt.MakeSpec("c").IsParent().Parent("b").Obj(),
				qt.MakeSpec("ok").Obj(),
			},
			want: map[string]error{"a": quota.ErrCycle, "b": quota.ErrCycle, "c": quota.ErrCycle},
		},
		{
			name:  "a quota that is its own parent",
			specs: []quota.Spec{qt.MakeSpec("a").IsParent().Parent("a").Obj()},
			want:  map[string]error{"a": quota.ErrCycle},
		},
		{
			name: "a negative max or min: that quota only",
			specs: []quota.Spec{
				qt.MakeSpec("p").IsParent().Min("cpu", "4", "memory", "4Gi").Max("cpu", "8", "memory", "8Gi").Obj(),
				qt.MakeSpec("neg-max").Parent("p").Max("cpu", "-1").Obj(),
				qt.MakeSpec("neg-min").Parent("p").Min("memory", "-1Gi").Max("memory", "4Gi").Obj(),
				qt.MakeSpec("fine").Parent("p").Min("cpu", "2").Max("cpu", "4").Obj(),
			},
			want: map[string]error{"neg-max": quota.ErrNegative, "neg-min": quota.ErrNegative},
		},
		{
			name:  "min above max",
			specs: []quota.Spec{qt.MakeSpec("a").Min("cpu", "2").Max("cpu", "1").Obj()},
			want:  map[string]error{"a": quota.ErrMinAboveMax},
		},
		{
			name: "children's mins above the parent's",
			specs: []quota.Spec{
				qt.MakeSpec("p").IsParent().Min("cpu", "2").Max("cpu", "10").Obj(),
				qt.MakeSpec("a").IsParent().Parent("p").Min("cpu", "2").Max("cpu", "10").Obj(),
				qt.MakeSpec("b").Parent("p").Min("cpu", "1").Max("cpu", "10").Obj(),
				qt.MakeSpec("c").Parent("a").Obj(),
			},
			want: map[string]error{"b": quota.ErrChildrenMinAboveMin},
		},
		{
			name: "the newest child whose min breaches the parent's is the one refused",
			specs: []quota.Spec{
				qt.MakeSpec("p").IsParent().Min("cpu", "4").Max("cpu", "10").Obj(),
				func() quota.Spec {
					s := qt.MakeSpec("z-old").Parent("p").Min("cpu", "3").Max("cpu", "10").Obj()
					s.Created = time.Unix(100, 0)
					return s
				}(),
				func() quota.Spec {
					s := qt.MakeSpec("a-new").Parent("p").Min("cpu", "3").Max("cpu", "10").Obj()
					s.Created = time.Unix(200, 0)
					return s
				}(),
				func() quota.Spec {
					s := qt.MakeSpec("small").Parent("p").Min("cpu", "1").Max("cpu", "10").Obj()
					s.Created = time.Unix(300, 0)
					return s
				}(),
			},
			want: map[string]error{"a-new": quota.ErrChildrenMinAboveMin},
		},
		{
			name: "a parent with no min: each child with a min is refused, the parent and the others admit",
			specs: []quota.Spec{
				qt.MakeSpec("org").IsParent().Max("cpu", "20").Obj(),
				qt.MakeSpec("team-x").Parent("org").Min("cpu", "4").Max("cpu", "20").Obj(),
				qt.MakeSpec("team-y").Parent("org").Max("cpu", "10").Obj(),
			},
			want: map[string]error{"team-x": quota.ErrMinNotInParent},
		},
		{
			name: "a child labelled allow-force-update is exempt from the children's mins rule, and its min counts",
			specs: []quota.Spec{
				qt.MakeSpec("p").IsParent().Min("cpu", "4").Max("cpu", "10").Obj(),
				func() quota.Spec {
					s := qt.MakeSpec("forced").Parent("p").Min("cpu", "5").Max("cpu", "10").ForceUpdate().Obj()
					s.Created = time.Unix(100, 0)
					return s
				}(),
				func() quota.Spec {
					s := qt.MakeSpec("later").Parent("p").Min("cpu", "1").Max("cpu", "10").Obj()
					s.Created = time.Unix(200, 0)
					return s
				}(),
			},
			want: map[string]error{"later": quota.ErrChildrenMinAboveMin},
		},
		{
			name: "a child's max naming other resources than its parent's is accepted (a difference from Koordinator's webhook)",
			specs: []quota.Spec{
				qt.MakeSpec("org").IsParent().Min("cpu", "8").Max("cpu", "20", "nvidia.com/gpu", "4").Obj(),
				qt.MakeSpec("team-x").Parent("org").Min("cpu", "4").Max("cpu", "10", "memory", "8Gi").Obj(),
			},
			want: map[string]error{},
		},
		{
			name: "a parent not labelled is-parent: its children are refused, the parent admits",
			specs: []quota.Spec{
				qt.MakeSpec("org").Min("cpu", "8").Max("cpu", "20").Obj(),
				qt.MakeSpec("team-x").Parent("org").Min("cpu", "4").Max("cpu", "10").Obj(),
				qt.MakeSpec("team-y").Parent("org").Max("cpu", "10").Obj(),
				qt.MakeSpec("elsewhere").Max("cpu", "10").Obj(),
			},
			want: map[string]error{"team-x": quota.ErrParentNotMarked, "team-y": quota.ErrParentNotMarked},
		},
		{
			name: "a min naming a resource max does not: that quota only",
			specs: []quota.Spec{
				qt.MakeSpec("org").IsParent().Min("cpu", "8", "memory", "8Gi").Max("cpu", "20", "memory", "20Gi").Obj(),
				qt.MakeSpec("team-x").Parent("org").Min("cpu", "4", "memory", "4Gi").Max("cpu", "10").Obj(),
				qt.MakeSpec("team-y").Parent("org").Min("cpu", "4").Max("cpu", "10").Obj(),
			},
			want: map[string]error{"team-x": quota.ErrMinNotInMax},
		},
		{
			name: "a child's min naming a resource its parent's min does not: that child only",
			specs: []quota.Spec{
				qt.MakeSpec("org").IsParent().Min("cpu", "8").Max("cpu", "20", "nvidia.com/gpu", "8").Obj(),
				qt.MakeSpec("team-x").Parent("org").Min("cpu", "4", "nvidia.com/gpu", "2").Max("cpu", "10", "nvidia.com/gpu", "4").Obj(),
				qt.MakeSpec("team-y").Parent("org").Min("cpu", "4").Max("cpu", "10", "nvidia.com/gpu", "4").Obj(),
				// Under the root, a min is the quota's own business.
				qt.MakeSpec("top").Min("nvidia.com/gpu", "1").Max("nvidia.com/gpu", "1").Obj(),
			},
			want: map[string]error{"team-x": quota.ErrMinNotInParent},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(t, qt.Res("cpu", "10"), tc.specs, nil)
			if diff := cmp.Diff(tc.want, errorsOf(e), errorsMatch); diff != "" {
				t.Errorf("Errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestErrorsHealWhenTheTreeIsFixed(t *testing.T) {
	e := newEngine(t, nil, []quota.Spec{qt.MakeSpec("a").Parent("p").Obj()}, nil)
	if !errors.Is(e.Err("a"), quota.ErrMissingParent) {
		t.Fatalf("Err(a) = %v, want ErrMissingParent", e.Err("a"))
	}
	e.UpsertQuota(qt.MakeSpec("p").Obj())
	if !errors.Is(e.Err("a"), quota.ErrParentNotMarked) {
		t.Fatalf("Err(a) after the parent appeared unlabelled = %v, want ErrParentNotMarked", e.Err("a"))
	}
	if err := e.Err("p"); err != nil {
		t.Errorf("Err(p), a parent not labelled as one = %v, want nil: only its child is refused", err)
	}
	e.UpsertQuota(qt.MakeSpec("p").IsParent().Obj())
	if err := e.Err("a"); err != nil {
		t.Errorf("Err(a) after the parent was labelled is-parent = %v", err)
	}
}

func TestDetachedQuotasStillCountAgainstTheCluster(t *testing.T) {
	e := newEngine(t, qt.Res("cpu", "4"), []quota.Spec{qt.MakeSpec("lost").Parent("ghost").Obj(), qt.MakeSpec("a").Obj()},
		[]charge{{key: "u1", quota: "lost", req: qt.Res("cpu", "3")}, {key: "u2", quota: "unknown", req: qt.Res("cpu", "1")}})
	if diff := cmp.Diff("cluster: cpu 4 used of capacity 4, request 1", e.Explain("a", e.Vector(qt.Res("cpu", "1")))); diff != "" {
		t.Errorf("Explain (-want +got):\n%s", diff)
	}
}

func TestRuntime(t *testing.T) {
	cases := []struct {
		name    string
		cap     corev1.ResourceList
		specs   []quota.Spec
		pending map[string]corev1.ResourceList
		charges []charge
		want    map[string]map[string]string
	}{
		{
			name: "min plus the remainder split by weight (default max), capped by demand",
			cap:  qt.Res("cpu", "12"),
			specs: []quota.Spec{
				qt.MakeSpec("a").Min("cpu", "2").Max("cpu", "12").Obj(),
				qt.MakeSpec("b").Min("cpu", "2").Max("cpu", "4").Obj(),
				qt.MakeSpec("idle").Min("cpu", "2").Max("cpu", "12").Obj(),
			},
			pending: map[string]corev1.ResourceList{"a": qt.Res("cpu", "20"), "b": qt.Res("cpu", "20")},
			// remainder 12-4 = 8 split 12:4 -> a 6, b 2; idle demands nothing.
			want: map[string]map[string]string{"a": {"cpu": "8"}, "b": {"cpu": "4"}, "idle": {}},
		},
		{
			name: "what a capped quota cannot take goes to the others",
			cap:  qt.Res("cpu", "12"),
			specs: []quota.Spec{
				qt.MakeSpec("a").Min("cpu", "2").Max("cpu", "12").Obj(),
				qt.MakeSpec("b").Min("cpu", "2").Max("cpu", "12").Obj(),
			},
			pending: map[string]corev1.ResourceList{"a": qt.Res("cpu", "20"), "b": qt.Res("cpu", "3")},
			want:    map[string]map[string]string{"a": {"cpu": "9"}, "b": {"cpu": "3"}},
		},
		{
			name: "shared-weight overrides max",
			cap:  qt.Res("cpu", "10"),
			specs: []quota.Spec{
				qt.MakeSpec("a").Max("cpu", "10").Weight("cpu", "3").Obj(),
				qt.MakeSpec("b").Max("cpu", "10").Weight("cpu", "1").Obj(),
			},
			pending: map[string]corev1.ResourceList{"a": qt.Res("cpu", "20"), "b": qt.Res("cpu", "20")},
			want:    map[string]map[string]string{"a": {"cpu": "7500m"}, "b": {"cpu": "2500m"}},
		},
		{
			name: "a quota that does not lend keeps its min in its runtime even when idle",
			cap:  qt.Res("cpu", "10"),
			specs: []quota.Spec{
				qt.MakeSpec("keeper").Min("cpu", "4").Max("cpu", "10").NoLending().Obj(),
				qt.MakeSpec("a").Max("cpu", "10").Obj(),
			},
			pending: map[string]corev1.ResourceList{"a": qt.Res("cpu", "20")},
			want:    map[string]map[string]string{"keeper": {"cpu": "4"}, "a": {"cpu": "6"}},
		},
		{
			// As koord-scheduler counts a quota's pods only in what its max
			// names; b's runtime of memory is not shown either.
			name: "a quota whose max does not name a resource takes none of its siblings' share of it",
			cap:  qt.Res("cpu", "10", "memory", "10Gi"),
			specs: []quota.Spec{
				qt.MakeSpec("a").Max("cpu", "10", "memory", "10Gi").Obj(),
				qt.MakeSpec("b").Max("cpu", "10").Obj(),
			},
			pending: map[string]corev1.ResourceList{"a": qt.Res("cpu", "20", "memory", "20Gi"), "b": qt.Res("cpu", "20", "memory", "20Gi")},
			want:    map[string]map[string]string{"a": {"cpu": "5", "memory": "10Gi"}, "b": {"cpu": "5"}},
		},
		{
			name: "a parent's runtime is split among its children",
			cap:  qt.Res("cpu", "10"),
			specs: []quota.Spec{
				qt.MakeSpec("p").IsParent().Max("cpu", "6").Obj(),
				qt.MakeSpec("c1").Parent("p").Max("cpu", "6").Obj(),
				qt.MakeSpec("c2").Parent("p").Max("cpu", "6").Obj(),
			},
			charges: []charge{{key: "u", quota: "c1", req: qt.Res("cpu", "1")}},
			pending: map[string]corev1.ResourceList{"c1": qt.Res("cpu", "9"), "c2": qt.Res("cpu", "9")},
			want:    map[string]map[string]string{"p": {"cpu": "6"}, "c1": {"cpu": "3"}, "c2": {"cpu": "3"}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(t, tc.cap, tc.specs, tc.charges)
			for q, r := range tc.pending {
				e.AddPending(q, e.Vector(r))
			}
			got := map[string]map[string]string{}
			for q := range tc.want {
				got[q] = str(e.Runtime(q))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Runtime (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAUnitAdmittedInTheDefaultQuotaTakesItsRoomOffTheOthers: what units
// of koordinator-default-quota hold, not what they wait for, is taken off
// their siblings' share, as koord-scheduler takes it off the root's total;
// so admitting one changes the others' runtimes.
func TestAUnitAdmittedInTheDefaultQuotaTakesItsRoomOffTheOthers(t *testing.T) {
	def := elasticquotav1alpha1.DefaultQuotaName
	e := newEngine(t, qt.Res("cpu", "10"), []quota.Spec{
		qt.MakeSpec(def).Max("cpu", "10").Obj(),
		qt.MakeSpec("team").Max("cpu", "10").Obj(),
	}, nil)
	req := e.Vector(qt.Res("cpu", "4"))
	e.AddPending(def, req)
	e.AddPending("team", e.Vector(qt.Res("cpu", "10")))
	if diff := cmp.Diff(map[string]string{"cpu": "10"}, str(e.Runtime("team"))); diff != "" {
		t.Errorf("Runtime(team) while the default quota's unit waits (-want +got):\n%s", diff)
	}
	if err := e.Admit(quota.Charge{Key: "u", Quota: def, Request: req}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"cpu": "6"}, str(e.Runtime("team"))); diff != "" {
		t.Errorf("Runtime(team) once it is admitted (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"cpu": "10"}, str(e.Runtime(def))); diff != "" {
		t.Errorf("Runtime(%s), its max (-want +got):\n%s", def, diff)
	}
}

func TestDominantShare(t *testing.T) {
	e := newEngine(t, qt.Res("cpu", "10", "memory", "10Gi"), []quota.Spec{
		qt.MakeSpec("a").Min("cpu", "5", "memory", "5Gi").Max("cpu", "5", "memory", "5Gi").Obj(),
	}, []charge{{key: "u", quota: "a", req: qt.Res("cpu", "1", "memory", "4Gi")}})
	// With enough waiting, the runtime is capped by max: 5 cpu, 5Gi.
	e.AddPending("a", e.Vector(qt.Res("cpu", "10", "memory", "10Gi")))
	if diff := cmp.Diff(0.8, e.DominantShare("a")); diff != "" {
		t.Errorf("DominantShare (-want +got):\n%s", diff)
	}
}

func TestAdmitLeavesRuntimesAlone(t *testing.T) {
	e := newEngine(t, qt.Res("cpu", "10"), []quota.Spec{qt.MakeSpec("a").Obj()}, nil)
	req := e.Vector(qt.Res("cpu", "1"))
	e.AddPending("a", req)
	e.Runtime("a")
	if err := e.Admit(quota.Charge{Key: "u", Quota: "a", Request: req}); err != nil {
		t.Fatal(err)
	}
	if e.RuntimeStale() {
		t.Errorf("admitting a pending unit made runtimes stale; it should not change demand")
	}
}

// TestRuntimeFollowsDemand: runtimes are recomputed when some quota's
// demand changed, and only then (a unit finishing while another of the same
// size arrives in its quota leaves every runtime as it was).
func TestRuntimeFollowsDemand(t *testing.T) {
	for _, tc := range []struct {
		name        string
		change      func(e *quota.Engine)
		wantRuntime map[string]string
		wantNewGen  bool
	}{{
		name:        "nothing changes",
		change:      func(e *quota.Engine) {},
		wantRuntime: map[string]string{"cpu": "5"},
	}, {
		name: "a unit finishes, one of the same size arrives in its quota",
		change: func(e *quota.Engine) {
			e.Release("u")
			e.AddPending("a", e.Vector(qt.Res("cpu", "2")))
		},
		wantRuntime: map[string]string{"cpu": "5"},
	}, {
		name: "a unit finishes and nothing arrives",
		change: func(e *quota.Engine) {
			e.Release("u")
		},
		wantRuntime: map[string]string{"cpu": "3"},
		wantNewGen:  true,
	}, {
		name: "more waits in the other quota",
		change: func(e *quota.Engine) {
			e.AddPending("b", e.Vector(qt.Res("cpu", "4")))
		},
		wantRuntime: map[string]string{"cpu": "4"},
		wantNewGen:  true,
	}, {
		name: "a pending unit leaves and comes back",
		change: func(e *quota.Engine) {
			e.RemovePending("b", e.Vector(qt.Res("cpu", "3")))
			e.AddPending("b", e.Vector(qt.Res("cpu", "3")))
		},
		wantRuntime: map[string]string{"cpu": "5"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(t, qt.Res("cpu", "8"), []quota.Spec{qt.MakeSpec("a").Max("cpu", "8").Obj(), qt.MakeSpec("b").Max("cpu", "8").Obj()},
				[]charge{{key: "u", quota: "a", req: qt.Res("cpu", "2")}})
			e.AddPending("a", e.Vector(qt.Res("cpu", "3")))
			e.AddPending("b", e.Vector(qt.Res("cpu", "3")))
			gen := e.RuntimeGeneration()
			tc.change(e)
			if diff := cmp.Diff(tc.wantRuntime, str(e.Runtime("a"))); diff != "" {
				t.Errorf("Runtime(a) (-want +got):\n%s", diff)
			}
			if got := e.RuntimeGeneration() != gen; got != tc.wantNewGen {
				t.Errorf("runtime generation changed: %v, want %v", got, tc.wantNewGen)
			}
		})
	}
}

func TestVictims(t *testing.T) {
	specs := []quota.Spec{
		qt.MakeSpec("owner").Min("cpu", "6").Max("cpu", "10").Obj(),
		qt.MakeSpec("borrower").Min("cpu", "2").Max("cpu", "10").Obj(),
		qt.MakeSpec("third").Min("cpu", "2").Max("cpu", "10").Obj(),
	}
	cases := []struct {
		name      string
		charges   []charge
		quota     string
		req       corev1.ResourceList
		priority  int32
		inQueue   bool
		want      []string
		wantFound bool
	}{
		{
			name: "reclaim: lowest priority first, then most recently admitted, only as many as needed",
			charges: []charge{
				{key: "b-old", quota: "borrower", req: qt.Res("cpu", "2"), priority: 1, admitted: time.Second},
				{key: "b-new", quota: "borrower", req: qt.Res("cpu", "2"), priority: 1, admitted: 2 * time.Second},
				{key: "b-high", quota: "borrower", req: qt.Res("cpu", "2"), priority: 9, admitted: 3 * time.Second},
				{key: "b-low", quota: "borrower", req: qt.Res("cpu", "1"), priority: 0, admitted: 0},
				{key: "b-base", quota: "borrower", req: qt.Res("cpu", "3"), priority: 5, admitted: 0},
			},
			quota: "owner", req: qt.Res("cpu", "3"),
			want: []string{"b-low", "b-new"}, wantFound: true,
		},
		{
			name: "reclaim spares victims that turn out not to be needed",
			charges: []charge{
				{key: "small", quota: "borrower", req: qt.Res("cpu", "1"), priority: 0},
				{key: "big", quota: "borrower", req: qt.Res("cpu", "4"), priority: 1},
				{key: "base", quota: "borrower", req: qt.Res("cpu", "2"), priority: 9},
			},
			quota: "owner", req: qt.Res("cpu", "5"),
			want: []string{"big"}, wantFound: true,
		},
		{
			name:    "reclaim takes a unit larger than what its quota borrows (Kueue's rule: the quota borrows before)",
			charges: []charge{{key: "b", quota: "borrower", req: qt.Res("cpu", "9")}},
			quota:   "owner", req: qt.Res("cpu", "2"),
			want: []string{"b"}, wantFound: true,
		},
		{
			name: "reclaim never takes a unit of a quota within its min",
			charges: []charge{
				{key: "b-within", quota: "borrower", req: qt.Res("cpu", "2"), priority: 0},
				{key: "t-over", quota: "third", req: qt.Res("cpu", "8"), priority: 9},
			},
			quota: "owner", req: qt.Res("cpu", "2"),
			want: []string{"t-over"}, wantFound: true,
		},
		{
			name: "reclaim never takes a unit of a quota within its min by what its units hold, whatever it reserves",
			charges: []charge{
				{key: "b-within", quota: "borrower", req: qt.Res("cpu", "2"), priority: 0},
				{key: "b-reserved", quota: "borrower", req: qt.Res("cpu", "3"), priority: 0, hold: true},
				{key: "t-over", quota: "third", req: qt.Res("cpu", "5"), priority: 9},
			},
			quota: "owner", req: qt.Res("cpu", "2"),
			want: []string{"t-over"}, wantFound: true,
		},
		{
			name: "reclaim never takes a reservation",
			charges: []charge{
				{key: "b-reserved", quota: "borrower", req: qt.Res("cpu", "5"), priority: 0, hold: true},
				{key: "t-over", quota: "third", req: qt.Res("cpu", "5"), priority: 9},
			},
			quota: "owner", req: qt.Res("cpu", "2"),
			want: []string{"t-over"}, wantFound: true,
		},
		{
			name: "reclaim stops taking from a quota once it no longer borrows",
			charges: []charge{
				{key: "b1", quota: "borrower", req: qt.Res("cpu", "2"), priority: 0},
				{key: "b2", quota: "borrower", req: qt.Res("cpu", "2"), priority: 0, admitted: time.Second},
				{key: "b3", quota: "borrower", req: qt.Res("cpu", "2"), priority: 0, admitted: 2 * time.Second},
				{key: "t", quota: "third", req: qt.Res("cpu", "4"), priority: 9},
			},
			quota: "owner", req: qt.Res("cpu", "6"),
			// b3 and b2 go first (most recent) while borrower is above its
			// min; at its min, b1 stays and third's t is taken; then b2,
			// no longer needed, is spared.
			want: []string{"b3", "t"}, wantFound: true,
		},
		{
			name:    "reclaim is only for a quota within its min",
			charges: []charge{{key: "o", quota: "owner", req: qt.Res("cpu", "5")}, {key: "b", quota: "borrower", req: qt.Res("cpu", "5")}},
			quota:   "owner", req: qt.Res("cpu", "2"),
		},
		{
			name: "in-queue: lower priority units of the same quota",
			charges: []charge{
				{key: "o-low", quota: "owner", req: qt.Res("cpu", "4"), priority: 1},
				{key: "o-same", quota: "owner", req: qt.Res("cpu", "4"), priority: 5},
				{key: "b", quota: "borrower", req: qt.Res("cpu", "2"), priority: 0},
			},
			quota: "owner", req: qt.Res("cpu", "4"), priority: 5, inQueue: true,
			want: []string{"o-low"}, wantFound: true,
		},
		{
			name:    "in-queue: never equal or higher priority",
			charges: []charge{{key: "o-same", quota: "owner", req: qt.Res("cpu", "10"), priority: 5}},
			quota:   "owner", req: qt.Res("cpu", "4"), priority: 5, inQueue: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(t, qt.Res("cpu", "10"), specs, tc.charges)
			before := str(e.Used(elasticquotav1alpha1.RootQuotaName))
			all := func(string) bool { return true }
			var got []string
			var found bool
			if tc.inQueue {
				got, found = e.LowerPriorityVictims(tc.quota, e.Vector(tc.req), tc.priority, all)
			} else {
				got, found = e.ReclaimVictims(tc.quota, e.Vector(tc.req), all)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" || found != tc.wantFound {
				t.Errorf("victims (-want +got):\n%s\nfound = %v, want %v", diff, found, tc.wantFound)
			}
			if diff := cmp.Diff(before, str(e.Used(elasticquotav1alpha1.RootQuotaName))); diff != "" {
				t.Errorf("choosing victims changed usage (-before +after):\n%s", diff)
			}
		})
	}
}

func TestSpecFromElasticQuota(t *testing.T) {
	eq := &elasticquotav1alpha1.ElasticQuota{
		ObjectMeta: metav1.ObjectMeta{
			Name: "team-a",
			Labels: map[string]string{
				elasticquotav1alpha1.LabelQuotaParent:       "org",
				elasticquotav1alpha1.LabelAllowLentResource: "false",
			},
			Annotations: map[string]string{elasticquotav1alpha1.AnnotationSharedWeight: `{"cpu":"3"}`},
		},
		Spec: elasticquotav1alpha1.ElasticQuotaSpec{Min: qt.Res("cpu", "1"), Max: qt.Res("cpu", "4")},
	}
	got, err := quota.SpecFromElasticQuota(eq)
	if err != nil {
		t.Fatal(err)
	}
	want := qt.MakeSpec("team-a").Parent("org").Min("cpu", "1").Max("cpu", "4").Weight("cpu", "3").NoLending().Obj()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("SpecFromElasticQuota (-want +got):\n%s", diff)
	}
	eq.Annotations[elasticquotav1alpha1.AnnotationSharedWeight] = "not json"
	got, err = quota.SpecFromElasticQuota(eq)
	if err == nil || got.SharedWeight != nil {
		t.Errorf("malformed shared-weight: err = %v, weight = %v; want an error and the default weight", err, got.SharedWeight)
	}
}

func TestCheckRequest(t *testing.T) {
	cases := map[string]struct {
		request corev1.ResourceList
		wantErr string
		// wantIs is the error wrapped; ErrRequestTooLarge unless set.
		wantIs error
	}{
		"zero is fine":               {request: qt.Res("cpu", "0")},
		"a negative amount":          {request: qt.Res("cpu", "4", "memory", "-1Gi"), wantErr: "request memory -1Gi is negative: a request must not be negative", wantIs: quota.ErrNegativeRequest},
		"a negative milli-cpu":       {request: qt.Res("cpu", "-1m"), wantErr: "request cpu -1m is negative", wantIs: quota.ErrNegativeRequest},
		"a negative amount of a GPU": {request: qt.Res("nvidia.com/gpu", "-1"), wantErr: "request nvidia.com/gpu -1 is negative", wantIs: quota.ErrNegativeRequest},
		"ordinary":                   {request: qt.Res("cpu", "64", "memory", "512Gi", "nvidia.com/gpu", "8")},
		"cpu at the bound":           {request: corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(quota.MaxRequest, resource.DecimalSI)}},
		"memory at the bound (8Pi)":  {request: qt.Res("memory", "8Pi")},
		"memory past any int64":      {request: qt.Res("cpu", "1", "memory", "1e40"), wantErr: "request memory 10e39 is larger than koord-queue can count (at most 8Pi per unit): it can never be admitted"},
		"cpu whose milli-cores wrap": {request: qt.Res("cpu", "9223372036854776"), wantErr: "request cpu 9223372036854776 is larger than koord-queue can count"},
		"a GPU count past the bound": {request: qt.Res("nvidia.com/gpu", "1e18"), wantErr: "request nvidia.com/gpu 1e18 is larger"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := quota.CheckRequest(tc.request)
			wantIs := tc.wantIs
			if wantIs == nil {
				wantIs = quota.ErrRequestTooLarge
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("CheckRequest = %v, want nil", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, wantIs)):
				t.Errorf("CheckRequest = %v, want %v saying %q", err, wantIs, tc.wantErr)
			}
		})
	}
}

func TestNamespaceUsedFollowsChargesAcrossQuotas(t *testing.T) {
	e := newEngine(t, qt.Res("cpu", "100", "memory", "100Gi", "nvidia.com/gpu", "8"), []quota.Spec{
		qt.MakeSpec("org").IsParent().Obj(),
		qt.MakeSpec("a").Parent("org").Obj(),
		qt.MakeSpec("b").Obj(),
	}, nil)
	namespaceUsed := func() map[string]map[string]string {
		out := map[string]map[string]string{}
		e.NamespaceUsed(func(ns string, used corev1.ResourceList) { out[ns] = str(used) })
		return out
	}
	charge := func(key, quotaName, ns string, req corev1.ResourceList) {
		t.Helper()
		if err := e.Charge(quota.Charge{Key: key, Quota: quotaName, Request: e.Vector(req), Namespace: ns}); err != nil {
			t.Fatalf("Charge(%s): %v", key, err)
		}
	}
	charge("team-a/u1", "a", "team-a", qt.Res("cpu", "1500m", "memory", "1Gi"))
	charge("team-a/u2", "b", "team-a", qt.Res("cpu", "2"))
	charge("team-b/u3", "a", "team-b", qt.Res("nvidia.com/gpu", "1"))
	charge("no-namespace", "a", "", qt.Res("cpu", "7"))

	steps := []struct {
		name string
		do   func()
		want map[string]map[string]string
	}{
		{
			name: "a namespace adds up its charges in every quota; a charge without one counts nowhere",
			do:   func() {},
			want: map[string]map[string]string{
				"team-a": {"cpu": "3500m", "memory": "1Gi"},
				"team-b": {"nvidia.com/gpu": "1"},
			},
		},
		{
			name: "a resize counts the new request",
			do: func() {
				if err := e.Resize("team-a/u2", e.Vector(qt.Res("cpu", "4", "memory", "2Gi"))); err != nil {
					t.Fatal(err)
				}
			},
			want: map[string]map[string]string{
				"team-a": {"cpu": "5500m", "memory": "3Gi"},
				"team-b": {"nvidia.com/gpu": "1"},
			},
		},
		{
			name: "a namespace whose last charge is released is forgotten",
			do:   func() { e.Release("team-b/u3") },
			want: map[string]map[string]string{
				"team-a": {"cpu": "5500m", "memory": "3Gi"},
			},
		},
		{
			name: "a resource no longer held is left out",
			do: func() {
				e.Release("team-a/u1")
				e.Release("team-a/u2")
				charge("team-a/u4", "b", "team-a", qt.Res("cpu", "1"))
			},
			want: map[string]map[string]string{
				"team-a": {"cpu": "1"},
			},
		},
	}
	for _, step := range steps {
		step.do()
		if diff := cmp.Diff(step.want, namespaceUsed()); diff != "" {
			t.Errorf("%s: NamespaceUsed (-want +got):\n%s", step.name, diff)
		}
	}
}

// TestEngineRefusesNegativeRequests: the engine charges no negative amount,
// whoever asks: a unit charged -8 cpu would make room for 8 cpu of others.
// Callers check requests first (CheckRequest); this is the last line.
func TestEngineRefusesNegativeRequests(t *testing.T) {
	e := newEngine(t, qt.Res("cpu", "100"), []quota.Spec{qt.MakeSpec("a").Max("cpu", "4").Obj()},
		[]charge{{key: "held", quota: "a", req: qt.Res("cpu", "4")}})
	negative := e.Vector(qt.Res("cpu", "-8", "memory", "1Gi"))
	const want = `unit "u" asks cpu -8: a request must not be negative`
	check := func(op string, err error) {
		t.Helper()
		if err == nil || err.Error() != want || !errors.Is(err, quota.ErrNegativeRequest) {
			t.Errorf("%s = %v, want ErrNegativeRequest saying %q", op, err, want)
		}
	}
	check("Charge", e.Charge(quota.Charge{Key: "u", Quota: "a", Request: negative}))
	e.AddPending("a", e.Vector(qt.Res("cpu", "1")))
	check("Admit", e.Admit(quota.Charge{Key: "u", Quota: "a", Request: negative}))
	if _, ok := e.Charged("u"); ok {
		t.Errorf("u is charged after a refused Charge and Admit")
	}
	if err := e.Charge(quota.Charge{Key: "u", Quota: "a", Request: e.Vector(qt.Res("cpu", "1"))}); err != nil {
		t.Fatal(err)
	}
	check("Resize", e.Resize("u", negative))
	if diff := cmp.Diff(map[string]string{"cpu": "5"}, str(e.Used("a"))); diff != "" {
		t.Errorf("Used(a) after the refusals (-want +got):\n%s", diff)
	}
}

// TestHeadroomAfter: a quota's headroom once some charges are gone and
// others made, on paper: the engine is left as it was, usage and change
// tracking alike.
func TestHeadroomAfter(t *testing.T) {
	specs := []quota.Spec{
		qt.MakeSpec("org").IsParent().Max("cpu", "8").Obj(),
		qt.MakeSpec("a").IsParent().Parent("org").Max("cpu", "8").Obj(),
		qt.MakeSpec("a-child").Parent("a").Max("cpu", "8").Obj(),
		qt.MakeSpec("b").Parent("org").Max("cpu", "8").Obj(),
		qt.MakeSpec("other").Max("cpu", "8").Obj(),
	}
	charges := []charge{
		{key: "victim", quota: "b", req: qt.Res("cpu", "5")},
		{key: "held", quota: "a", req: qt.Res("cpu", "1"), hold: true},
		{key: "elsewhere", quota: "other", req: qt.Res("cpu", "4")},
	}
	cases := map[string]struct {
		quota string
		gone  []string
		added map[string]string // quota: cpu
		want  string            // cpu headroom
	}{
		"as it is":                       {quota: "a-child", want: "2"},
		"victim gone":                    {quota: "a-child", gone: []string{"victim"}, want: "7"},
		"victim gone, preemptor charged": {quota: "a-child", gone: []string{"victim"}, added: map[string]string{"a": "4"}, want: "3"},
		"listed twice, gone once":        {quota: "a-child", gone: []string{"victim", "victim"}, want: "7"},
		"unknown keys are skipped":       {quota: "a-child", gone: []string{"nobody"}, want: "2"},
		// The cluster (12 cpu) binds: what org's quotas hold counts there.
		"another tree": {quota: "other", gone: []string{"victim"}, added: map[string]string{"a": "6"}, want: "1"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newEngine(t, qt.Res("cpu", "12"), specs, charges)
			e.DrainChanged(nil)
			usedBefore := map[string]map[string]string{}
			for _, s := range specs {
				usedBefore[s.Name] = str(e.Used(s.Name))
			}
			var added []quota.Charge
			for q, cpu := range tc.added {
				added = append(added, quota.Charge{Quota: q, Request: e.Vector(qt.Res("cpu", cpu))})
			}
			free, err := e.HeadroomAfter(tc.quota, tc.gone, added, nil)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(map[string]string{"cpu": tc.want}, str(e.ResourceList(free))); diff != "" {
				t.Errorf("HeadroomAfter (-want +got):\n%s", diff)
			}
			for _, s := range specs {
				if diff := cmp.Diff(usedBefore[s.Name], str(e.Used(s.Name))); diff != "" {
					t.Errorf("Used(%s) changed on paper (-want +got):\n%s", s.Name, diff)
				}
			}
			if changed := e.DrainChanged(nil); len(changed) > 0 {
				t.Errorf("DrainChanged() = %v after a change on paper, want none", changed)
			}
		})
	}
}
