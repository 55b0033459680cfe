package quota_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/quota"
	qt "github.com/koord-queue/koord-queue/pkg/quota/quotatest"
)

// Koordinator's multiple quota trees: each tree (node pool) has its own
// capacity, its root's total-resource, and nothing crosses a tree.

func TestTreeRulesAreReportedOnTheQuotaThatBreaksThem(t *testing.T) {
	cases := []struct {
		name  string
		specs []quota.Spec
		want  map[string]error
	}{
		{
			name: "a well-formed tree and a classic quota are valid",
			specs: []quota.Spec{
				qt.MakeSpec("a100").IsParent().TreeRoot("t1", "nvidia.com/gpu", "8").Obj(),
				qt.MakeSpec("team").Parent("a100").Tree("t1").Obj(),
				qt.MakeSpec("classic").Obj(),
			},
			want: map[string]error{},
		},
		{
			name: "a tree root without a total-resource is invalid, and so its tree",
			specs: []quota.Spec{
				func() quota.Spec {
					s := qt.MakeSpec("a100").IsParent().TreeRoot("t1").Obj()
					s.TreeTotal = nil
					return s
				}(),
				qt.MakeSpec("team").Parent("a100").Tree("t1").Obj(),
			},
			want: map[string]error{"a100": quota.ErrTreeCapacity, "team": quota.ErrInvalidAncestor},
		},
		{
			name: "a tree root whose total-resource is negative is invalid, and so its tree",
			specs: []quota.Spec{
				qt.MakeSpec("a100").IsParent().TreeRoot("t1", "nvidia.com/gpu", "-8").Obj(),
				qt.MakeSpec("team").Parent("a100").Tree("t1").Obj(),
			},
			want: map[string]error{"a100": quota.ErrTreeCapacity, "team": quota.ErrInvalidAncestor},
		},
		{
			name: "a child of another tree than its parent's",
			specs: []quota.Spec{
				qt.MakeSpec("a100").IsParent().TreeRoot("t1", "nvidia.com/gpu", "8").Obj(),
				qt.MakeSpec("h100").IsParent().TreeRoot("t2", "nvidia.com/gpu", "8").Obj(),
				qt.MakeSpec("stray").Parent("a100").Tree("t2").Obj(),
			},
			want: map[string]error{"stray": quota.ErrTreeMismatch},
		},
		{
			name: "a child with no tree id under a tree's quota",
			specs: []quota.Spec{
				qt.MakeSpec("a100").IsParent().TreeRoot("t1", "nvidia.com/gpu", "8").Obj(),
				qt.MakeSpec("untagged").Parent("a100").Obj(),
			},
			want: map[string]error{"untagged": quota.ErrTreeMismatch},
		},
		{
			name: "a child with a tree id under a classic quota",
			specs: []quota.Spec{
				qt.MakeSpec("org").IsParent().Obj(),
				qt.MakeSpec("tagged").Parent("org").Tree("t1").Obj(),
			},
			want: map[string]error{"tagged": quota.ErrTreeMismatch},
		},
		{
			name: "a quota with a tree id under the root that is not labelled the tree's root",
			specs: []quota.Spec{
				qt.MakeSpec("a100").IsParent().TreeRoot("t1", "nvidia.com/gpu", "8").Obj(),
				qt.MakeSpec("sibling").Tree("t1").Obj(),
				qt.MakeSpec("orphan").Tree("t9").Obj(),
			},
			want: map[string]error{"sibling": quota.ErrNotTreeRoot, "orphan": quota.ErrNotTreeRoot},
		},
		{
			name: "two roots of one tree: the second by name is refused",
			specs: []quota.Spec{
				qt.MakeSpec("a100").IsParent().TreeRoot("t1", "nvidia.com/gpu", "8").Obj(),
				qt.MakeSpec("a100-bis").IsParent().TreeRoot("t1", "nvidia.com/gpu", "8").Obj(),
				qt.MakeSpec("team").Parent("a100-bis").Tree("t1").Obj(),
			},
			want: map[string]error{"a100-bis": quota.ErrDuplicateTreeRoot, "team": quota.ErrInvalidAncestor},
		},
		{
			name: "a tree root that does not hang from the root",
			specs: []quota.Spec{
				qt.MakeSpec("org").IsParent().Obj(),
				qt.MakeSpec("a100").Parent("org").TreeRoot("t1", "nvidia.com/gpu", "8").Obj(),
			},
			want: map[string]error{"a100": quota.ErrTreeRootParent},
		},
		{
			name:  "is-root without a tree id is a classic quota",
			specs: []quota.Spec{qt.MakeSpec("plain").TreeRoot("").Obj()},
			want:  map[string]error{},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(t, qt.Res("cpu", "100", "nvidia.com/gpu", "32"), tc.specs, nil)
			got := map[string]error{}
			for _, qe := range e.Errors() {
				got[qe.Quota] = qe.Err
			}
			for q, want := range tc.want {
				if !errors.Is(got[q], want) {
					t.Errorf("Err(%s) = %v, want %v", q, got[q], want)
				}
			}
			for q, err := range got {
				if _, ok := tc.want[q]; !ok {
					t.Errorf("Err(%s) = %v, want none", q, err)
				}
			}
		})
	}
}

// pools is a cluster of 100 cpu and 16 GPUs, split into two pools (trees)
// of 8 GPUs and 20 cpu each, and the classic tree with the rest.
func pools(extra ...quota.Spec) []quota.Spec {
	return append([]quota.Spec{
		qt.MakeSpec("a100").IsParent().TreeRoot("t1", "cpu", "20", "nvidia.com/gpu", "8").Obj(),
		qt.MakeSpec("a100-team").Parent("a100").Tree("t1").Obj(),
		qt.MakeSpec("a100-other").Parent("a100").Tree("t1").Obj(),
		qt.MakeSpec("h100").IsParent().TreeRoot("t2", "cpu", "20", "nvidia.com/gpu", "8").Obj(),
		qt.MakeSpec("h100-team").Parent("h100").Tree("t2").Obj(),
		qt.MakeSpec("classic").Obj(),
	}, extra...)
}

var poolCluster = qt.Res("cpu", "100", "nvidia.com/gpu", "16")

func TestATreeAdmitsOnlyWithinItsOwnCapacity(t *testing.T) {
	cases := []struct {
		name    string
		specs   []quota.Spec
		charges []charge
		quota   string
		req     corev1.ResourceList
		want    string
	}{
		{
			name:  "a request within the tree's capacity fits",
			specs: pools(),
			quota: "a100-team",
			req:   qt.Res("nvidia.com/gpu", "8"),
			want:  "",
		},
		{
			name:    "a full pool's unit waits, naming the pool, while the other pool has room",
			specs:   pools(),
			charges: []charge{{key: "u1", quota: "a100-other", req: qt.Res("nvidia.com/gpu", "6")}},
			quota:   "a100-team",
			req:     qt.Res("nvidia.com/gpu", "4"),
			want:    "a100 (root of quota tree t1): nvidia.com/gpu 6 used of capacity 8, request 4",
		},
		{
			name:  "a request beyond the pool's capacity waits for the pool to grow",
			specs: pools(),
			quota: "a100-team",
			req:   qt.Res("nvidia.com/gpu", "9"),
			want:  "request nvidia.com/gpu 9 exceeds the capacity 8 of quota tree t1 (root a100): it cannot be admitted until the pool grows",
		},
		{
			name: "a full pool's unit waits, naming the tree and its pool",
			specs: []quota.Spec{
				qt.MakeSpec("a100").IsParent().TreeRoot("t1", "nvidia.com/gpu", "8").Pool("gpu-a100").Obj(),
				qt.MakeSpec("a100-team").Parent("a100").Tree("t1").Obj(),
			},
			charges: []charge{{key: "u1", quota: "a100-team", req: qt.Res("nvidia.com/gpu", "6")}},
			quota:   "a100-team",
			req:     qt.Res("nvidia.com/gpu", "4"),
			want:    "a100 (root of quota tree t1, pool gpu-a100): nvidia.com/gpu 6 used of capacity 8, request 4",
		},
		{
			name: "a request beyond the pool's capacity names the tree and its pool",
			specs: []quota.Spec{
				qt.MakeSpec("a100").IsParent().TreeRoot("t1", "nvidia.com/gpu", "8").Pool("gpu-a100").Obj(),
				qt.MakeSpec("a100-team").Parent("a100").Tree("t1").Obj(),
			},
			quota: "a100-team",
			req:   qt.Res("nvidia.com/gpu", "9"),
			want:  "request nvidia.com/gpu 9 exceeds the capacity 8 of quota tree t1 (pool gpu-a100, root a100): it cannot be admitted until the pool grows",
		},
		{
			name: "a tree root's own max binds below its capacity",
			specs: []quota.Spec{
				qt.MakeSpec("a100").IsParent().Max("nvidia.com/gpu", "4").TreeRoot("t1", "nvidia.com/gpu", "8").Obj(),
				qt.MakeSpec("a100-team").Parent("a100").Tree("t1").Obj(),
			},
			charges: []charge{{key: "u1", quota: "a100-team", req: qt.Res("nvidia.com/gpu", "3")}},
			quota:   "a100-team",
			req:     qt.Res("nvidia.com/gpu", "2"),
			want:    "a100 (root of quota tree t1): nvidia.com/gpu 3 used of max 4, request 2",
		},
		{
			name:  "a resource the tree's total does not name has no capacity in the tree",
			specs: pools(qt.MakeSpec("classic-mem").Max("memory", "1Ti").Obj()),
			quota: "a100-team",
			req:   qt.Res("memory", "1Gi"),
			want:  "request memory 1Gi exceeds the capacity 0 of quota tree t1 (root a100): it cannot be admitted until the pool grows",
		},
		{
			name:    "the classic tree's capacity is the cluster's less the trees' totals",
			specs:   pools(),
			charges: []charge{{key: "u1", quota: "classic", req: qt.Res("cpu", "50")}},
			quota:   "classic",
			req:     qt.Res("cpu", "20"),
			want:    "cluster: cpu 50 used of capacity 60, request 20",
		},
		{
			name: "a tree labelled ignore-default-tree leaves the classic tree's capacity alone",
			specs: []quota.Spec{
				qt.MakeSpec("a100").IsParent().TreeRoot("t1", "cpu", "20", "nvidia.com/gpu", "8").IgnoreDefaultTree().Obj(),
				qt.MakeSpec("classic").Obj(),
			},
			charges: []charge{{key: "u1", quota: "classic", req: qt.Res("cpu", "50")}},
			quota:   "classic",
			req:     qt.Res("cpu", "50"),
			want:    "",
		},
		{
			name:    "a tree's usage does not count in the classic tree",
			specs:   pools(),
			charges: []charge{{key: "u1", quota: "a100-team", req: qt.Res("cpu", "20")}, {key: "u2", quota: "h100-team", req: qt.Res("cpu", "20")}},
			quota:   "classic",
			req:     qt.Res("cpu", "60"),
			want:    "",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(t, poolCluster, tc.specs, tc.charges)
			if err := e.Err(tc.quota); err != nil {
				t.Fatalf("Err(%s) = %v", tc.quota, err)
			}
			got := e.Explain(tc.quota, e.Vector(tc.req))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Explain (-want +got):\n%s", diff)
			}
			free, _, err := e.Headroom(tc.quota, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if fits := quota.Fits(e.Vector(tc.req), free); fits != (tc.want == "") {
				t.Errorf("Fits = %v, want %v", fits, tc.want == "")
			}
		})
	}
}

func TestATreeRootWithoutCapacityAdmitsNothing(t *testing.T) {
	root := qt.MakeSpec("a100").IsParent().TreeRoot("t1").Obj()
	root.TreeTotal = nil
	e := newEngine(t, poolCluster, []quota.Spec{root, qt.MakeSpec("a100-team").Parent("a100").Tree("t1").Obj()}, nil)
	if _, _, err := e.Headroom("a100-team", nil, nil); !errors.Is(err, quota.ErrInvalidAncestor) {
		t.Errorf("Headroom(a100-team): err = %v, want %v", err, quota.ErrInvalidAncestor)
	}
}

// TestANegativeTreeTotalIsNoCapacity: a total-resource with a negative
// amount is as malformed as one that is not JSON: its root is invalid
// (ErrTreeCapacity), its tree admits nothing, and the classic tree's
// capacity is the cluster's, neither raised by the negative amount nor
// lowered by the rest.
func TestANegativeTreeTotalIsNoCapacity(t *testing.T) {
	root := qt.MakeSpec("a100").IsParent().TreeRoot("t1", "cpu", "-80", "nvidia.com/gpu", "8").Obj()
	e := newEngine(t, poolCluster, []quota.Spec{root, qt.MakeSpec("a100-team").Parent("a100").Tree("t1").Obj()}, nil)
	if err := e.Err("a100"); !errors.Is(err, quota.ErrTreeCapacity) {
		t.Errorf("Err(a100) = %v, want %v", err, quota.ErrTreeCapacity)
	}
	if _, _, err := e.Headroom("a100-team", nil, nil); !errors.Is(err, quota.ErrInvalidAncestor) {
		t.Errorf("Headroom(a100-team): err = %v, want %v", err, quota.ErrInvalidAncestor)
	}
	want := map[string]string{"cpu": "100", "nvidia.com/gpu": "16"}
	if diff := cmp.Diff(want, str(e.Capacity(elasticquotav1alpha1.RootQuotaName))); diff != "" {
		t.Errorf("Capacity(%s) (-want +got):\n%s", elasticquotav1alpha1.RootQuotaName, diff)
	}
	if got := e.Capacity("a100"); got != nil {
		t.Errorf("Capacity(a100) = %v, want none", got)
	}
}

func TestATreeCapacityFallingShrinksTheRoom(t *testing.T) {
	e := newEngine(t, poolCluster, pools(), nil)
	before := e.Shrinks()
	e.UpsertQuota(qt.MakeSpec("a100").IsParent().TreeRoot("t1", "cpu", "20", "nvidia.com/gpu", "4").Obj())
	if e.Shrinks() == before {
		t.Errorf("Shrinks did not move when a tree's capacity fell")
	}
}

func TestReclaimNeverCrossesTrees(t *testing.T) {
	cases := []struct {
		name      string
		specs     []quota.Spec
		charges   []charge
		quota     string
		req       corev1.ResourceList
		want      []string
		wantFound bool
	}{
		{
			name: "a classic quota reclaims in the classic tree, not from a pool's borrower",
			specs: pools(
				qt.MakeSpec("owner").Min("cpu", "40").Max("cpu", "60").Obj(),
				qt.MakeSpec("lender").Max("cpu", "60").Obj(),
			),
			charges: []charge{
				{key: "pool-borrower", quota: "a100-team", req: qt.Res("cpu", "20"), priority: 0},
				{key: "classic-borrower", quota: "lender", req: qt.Res("cpu", "40"), priority: 5},
			},
			quota: "owner", req: qt.Res("cpu", "40"),
			want: []string{"classic-borrower"}, wantFound: true,
		},
		{
			name: "a pool's quota reclaims only in its pool",
			specs: []quota.Spec{
				qt.MakeSpec("a100").IsParent().Min("cpu", "20").Max("cpu", "20").TreeRoot("t1", "cpu", "20").Obj(),
				qt.MakeSpec("p-owner").Parent("a100").Tree("t1").Min("cpu", "10").Max("cpu", "20").Obj(),
				qt.MakeSpec("p-lender").Parent("a100").Tree("t1").Max("cpu", "20").Obj(),
				qt.MakeSpec("h100").IsParent().Min("cpu", "20").Max("cpu", "20").TreeRoot("t2", "cpu", "20").Obj(),
				qt.MakeSpec("h-lender").Parent("h100").Tree("t2").Max("cpu", "20").Obj(),
			},
			charges: []charge{
				{key: "other-pool", quota: "h-lender", req: qt.Res("cpu", "20"), priority: 0},
				{key: "same-pool", quota: "p-lender", req: qt.Res("cpu", "20"), priority: 5},
			},
			quota: "p-owner", req: qt.Res("cpu", "10"),
			want: []string{"same-pool"}, wantFound: true,
		},
		{
			name: "no victim in the pool: nothing is taken from another",
			specs: []quota.Spec{
				qt.MakeSpec("a100").IsParent().Min("cpu", "20").Max("cpu", "20").TreeRoot("t1", "cpu", "15").Obj(),
				qt.MakeSpec("p-owner").Parent("a100").Tree("t1").Min("cpu", "10").Max("cpu", "20").Obj(),
				qt.MakeSpec("p-holder").Parent("a100").Tree("t1").Min("cpu", "10").Max("cpu", "20").Obj(),
				qt.MakeSpec("classic").Obj(),
			},
			charges: []charge{
				{key: "within-min", quota: "p-holder", req: qt.Res("cpu", "10"), priority: 9},
				{key: "classic-borrower", quota: "classic", req: qt.Res("cpu", "80"), priority: 0},
			},
			quota: "p-owner", req: qt.Res("cpu", "10"),
			want: nil, wantFound: false,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(t, poolCluster, tc.specs, tc.charges)
			got, found := e.ReclaimVictims(tc.quota, e.Vector(tc.req), func(string) bool { return true })
			if diff := cmp.Diff(tc.want, got); diff != "" || found != tc.wantFound {
				t.Errorf("ReclaimVictims = %v, %v; want %v (-want +got):\n%s", got, found, tc.wantFound, diff)
			}
		})
	}
}

func TestFairSharingIsPerTree(t *testing.T) {
	e := newEngine(t, qt.Res("cpu", "12"), []quota.Spec{
		qt.MakeSpec("pool").IsParent().TreeRoot("t1", "cpu", "4").Obj(),
		qt.MakeSpec("a").Parent("pool").Tree("t1").Max("cpu", "12").Obj(),
		qt.MakeSpec("b").Parent("pool").Tree("t1").Max("cpu", "12").Obj(),
		qt.MakeSpec("c").Max("cpu", "12").Obj(),
	}, nil)
	for _, q := range []string{"a", "b", "c"} {
		e.AddPending(q, e.Vector(qt.Res("cpu", "20")))
	}
	got := map[string]map[string]string{}
	for _, q := range []string{"pool", "a", "b", "c"} {
		got[q] = str(e.Runtime(q))
	}
	// The pool's 4 cpu split between a and b; c has the classic tree's 8.
	want := map[string]map[string]string{"pool": {"cpu": "4"}, "a": {"cpu": "2"}, "b": {"cpu": "2"}, "c": {"cpu": "8"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Runtime (-want +got):\n%s", diff)
	}
}

func TestSpecFromElasticQuotaReadsTheTree(t *testing.T) {
	eq := func(annotations map[string]string) *elasticquotav1alpha1.ElasticQuota {
		return &elasticquotav1alpha1.ElasticQuota{
			ObjectMeta: metav1.ObjectMeta{
				Name: "a100",
				Labels: map[string]string{
					elasticquotav1alpha1.LabelQuotaIsParent:          "true",
					elasticquotav1alpha1.LabelQuotaTreeID:            "t1",
					elasticquotav1alpha1.LabelQuotaIsRoot:            "true",
					elasticquotav1alpha1.LabelQuotaIgnoreDefaultTree: "true",
				},
				Annotations: annotations,
			},
		}
	}
	got, err := quota.SpecFromElasticQuota(eq(map[string]string{elasticquotav1alpha1.AnnotationTotalResource: `{"cpu":"20","nvidia.com/gpu":"8"}`}))
	if err != nil {
		t.Fatal(err)
	}
	want := qt.MakeSpec("a100").IsParent().TreeRoot("t1", "cpu", "20", "nvidia.com/gpu", "8").IgnoreDefaultTree().Obj()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("SpecFromElasticQuota (-want +got):\n%s", diff)
	}
	for _, annotations := range []map[string]string{{elasticquotav1alpha1.AnnotationTotalResource: "not json"}, nil} {
		got, err = quota.SpecFromElasticQuota(eq(annotations))
		if malformed := annotations != nil; malformed != (err != nil) || got.TreeTotal != nil {
			t.Errorf("total-resource %v: err = %v, total = %v; want an error only if malformed, and no total", annotations, err, got.TreeTotal)
		}
	}
}

// TestPropertyNoTreeExceedsItsCapacity charges random requests into random
// forests (the classic tree and up to three quota trees, some without a
// capacity, some labelled ignore-default-tree), each only if Headroom says
// it fits, and checks: no quota exceeds a max it names, no tree its
// capacity, the classic tree never the cluster less the trees' totals,
// Explain agrees with Headroom, reclaim takes victims only in the
// reclaiming quota's tree, and releasing everything empties every tree.
func TestPropertyNoTreeExceedsItsCapacity(t *testing.T) {
	for seed := uint64(1); seed <= 200; seed++ {
		rng := rand.New(rand.NewPCG(seed, 13))
		capacity, specs, names := randomForest(rng)
		e := newEngine(t, capacity, specs, nil)
		top := func(q string) string {
			last := ""
			e.Ancestors(q, func(name string) { last = name })
			return last
		}
		var charged []string
		for i := 0; i < 80; i++ {
			q := names[rng.IntN(len(names))]
			if e.Err(q) != nil {
				continue
			}
			req := e.Vector(qt.Res("cpu", fmt.Sprint(rng.IntN(4)), "memory", fmt.Sprintf("%dGi", rng.IntN(4))))
			free, _, err := e.Headroom(q, nil, nil)
			if err != nil {
				t.Fatalf("seed %d: Headroom(%s): %v", seed, q, err)
			}
			fits := quota.Fits(req, free)
			if why := e.Explain(q, req); (why == "") != fits {
				t.Fatalf("seed %d: Fits = %v but Explain = %q", seed, fits, why)
			}
			if !fits {
				victims, ok := e.ReclaimVictims(q, req, func(string) bool { return true })
				for _, v := range victims {
					c, _ := e.Charged(v)
					if top(c.Quota) != top(q) {
						t.Fatalf("seed %d: %s reclaims %s of %s, in tree %s, not its own %s", seed, q, v, c.Quota, top(c.Quota), top(q))
					}
				}
				if ok && rng.IntN(2) == 0 {
					for _, v := range victims {
						e.Release(v)
					}
				}
				continue
			}
			key := fmt.Sprintf("u%d", i)
			if err := e.Charge(quota.Charge{Key: key, Quota: q, Request: req}); err != nil {
				t.Fatal(err)
			}
			charged = append(charged, key)
			checkForestWithin(t, seed, e, specs, capacity)
			if rng.IntN(4) == 0 {
				e.Release(charged[rng.IntN(len(charged))])
			}
		}
		for _, k := range charged {
			e.Release(k)
		}
		for _, r := range append([]string{elasticquotav1alpha1.RootQuotaName}, names...) {
			if used := e.Used(r); len(used) != 0 {
				t.Fatalf("seed %d: usage left in %s after releasing everything: %v", seed, r, used)
			}
		}
	}
}

// randomForest is randomTree's classic tree plus up to three quota trees,
// each randomTree's shape under a tree root; some roots have no capacity
// (their tree admits nothing), some leave the classic tree's capacity alone.
func randomForest(rng *rand.Rand) (corev1.ResourceList, []quota.Spec, []string) {
	capacity, specs, names := randomTree(rng)
	for tr := 0; tr < rng.IntN(4); tr++ {
		id := fmt.Sprintf("t%d", tr)
		root := fmt.Sprintf("%s-root", id)
		totalMem := fmt.Sprintf("%dGi", 2+rng.IntN(10))
		w := qt.MakeSpec(root).IsParent().TreeRoot(id, "cpu", fmt.Sprint(1+rng.IntN(8)), "memory", totalMem).
			Min("memory", totalMem).Max("memory", totalMem)
		if rng.IntN(3) == 0 {
			w.IgnoreDefaultTree()
		}
		s := w.Obj()
		if rng.IntN(6) == 0 {
			s.TreeTotal = nil
		}
		specs = append(specs, s)
		names = append(names, root)
		_, sub, subNames := randomTree(rng)
		for i := range sub {
			sub[i].Name = id + "-" + sub[i].Name
			sub[i].TreeID = id
			if sub[i].Parent == "" {
				sub[i].Parent = root
			} else {
				sub[i].Parent = id + "-" + sub[i].Parent
			}
			names = append(names, id+"-"+subNames[i])
		}
		specs = append(specs, sub...)
	}
	// Half the mins lend, so that quotas borrow and reclaim has victims.
	for i := range specs {
		specs[i].DisallowLending = specs[i].DisallowLending && rng.IntN(2) == 0
	}
	return capacity, specs, names
}

// checkForestWithin checks every max, every tree's capacity, and the
// classic tree's capacity: the cluster's less the totals of the trees not
// labelled ignore-default-tree.
func checkForestWithin(t *testing.T, seed uint64, e *quota.Engine, specs []quota.Spec, capacity corev1.ResourceList) {
	t.Helper()
	classic := capacity.DeepCopy()
	for _, s := range specs {
		used := e.Used(s.Name)
		for name, mx := range s.Max {
			if u := used[name]; u.Cmp(mx) > 0 {
				t.Fatalf("seed %d: %s uses %s %s, max %s", seed, s.Name, name, u.String(), mx.String())
			}
		}
		if !s.IsTreeRoot || s.TreeID == "" {
			continue
		}
		for name, u := range used {
			if c := s.TreeTotal[name]; u.Cmp(c) > 0 {
				t.Fatalf("seed %d: tree %s uses %s %s, capacity %s", seed, s.TreeID, name, u.String(), c.String())
			}
		}
		if s.IgnoreDefaultTree {
			continue
		}
		for name, c := range s.TreeTotal {
			left := classic[name]
			left.Sub(c)
			classic[name] = left
		}
	}
	used := e.Used(elasticquotav1alpha1.RootQuotaName)
	for name, c := range classic {
		if u := used[name]; u.Sign() > 0 && u.Cmp(c) > 0 {
			t.Fatalf("seed %d: the classic tree uses %s %s of %s", seed, name, u.String(), c.String())
		}
	}
}

func TestEachQuotaKnowsItsTreeAndEachRootItsCapacity(t *testing.T) {
	e := newEngine(t, poolCluster, pools(qt.MakeSpec("stray").Tree("t1").Obj()), nil)
	gotRoot, gotCap := map[string]string{}, map[string]map[string]string{}
	for _, q := range []string{elasticquotav1alpha1.RootQuotaName, "a100", "a100-team", "h100-team", "classic", "stray", "unknown"} {
		gotRoot[q] = e.TreeRoot(q)
		if c := e.Capacity(q); c != nil {
			gotCap[q] = str(c)
		}
	}
	wantRoot := map[string]string{
		elasticquotav1alpha1.RootQuotaName: elasticquotav1alpha1.RootQuotaName, "a100": "a100", "a100-team": "a100",
		"h100-team": "h100", "classic": elasticquotav1alpha1.RootQuotaName, "stray": "a100", "unknown": "",
	}
	if diff := cmp.Diff(wantRoot, gotRoot); diff != "" {
		t.Errorf("TreeRoot (-want +got):\n%s", diff)
	}
	wantCap := map[string]map[string]string{
		elasticquotav1alpha1.RootQuotaName: {"cpu": "60", "nvidia.com/gpu": "0"},
		"a100":                             {"cpu": "20", "nvidia.com/gpu": "8"},
	}
	if diff := cmp.Diff(wantCap, gotCap); diff != "" {
		t.Errorf("Capacity (-want +got):\n%s", diff)
	}
}

// A tree root's min follows its pool (koord-manager sets it to the pool's
// total), and Koordinator's webhook does not check a tree root's min against
// its children's: a pool shrinking below its children's mins leaves the tree
// usable, the children's mins then scaled to what the root has.
func TestATreeRootsMinFallingBelowItsChildrensKeepsTheTree(t *testing.T) {
	root := func(min string) quota.Spec {
		return qt.MakeSpec("a100").IsParent().Min("cpu", min).Max("cpu", "1000").TreeRoot("t1", "cpu", min).Obj()
	}
	e := newEngine(t, poolCluster, []quota.Spec{
		root("20"),
		qt.MakeSpec("a").Parent("a100").Tree("t1").Min("cpu", "10").Max("cpu", "20").Obj(),
		qt.MakeSpec("b").Parent("a100").Tree("t1").Min("cpu", "10").Max("cpu", "20").Obj(),
	}, nil)
	e.MarkLoaded()
	e.UpsertQuota(root("15"))
	if diff := cmp.Diff(map[string]error{}, errorsOf(e)); diff != "" {
		t.Errorf("Errors after the pool shrank (-want +got):\n%s", diff)
	}
}

// TestPoolOfAQuota: a quota's pool is its tree root's pool, else its tree
// id; the classic tree has none.
func TestPoolOfAQuota(t *testing.T) {
	e := newEngine(t, poolCluster, []quota.Spec{
		qt.MakeSpec("a100").IsParent().TreeRoot("t1", "nvidia.com/gpu", "8").Pool("gpu-a100").Obj(),
		qt.MakeSpec("a100-team").Parent("a100").Tree("t1").Obj(),
		qt.MakeSpec("h100").IsParent().TreeRoot("t2", "nvidia.com/gpu", "8").Obj(),
		qt.MakeSpec("h100-team").Parent("h100").Tree("t2").Obj(),
		qt.MakeSpec("classic").Obj(),
	}, nil)
	got := map[string]string{}
	for _, name := range []string{"a100", "a100-team", "h100-team", "classic", "unknown"} {
		got[name] = e.Pool(name)
	}
	want := map[string]string{"a100": "gpu-a100", "a100-team": "gpu-a100", "h100-team": "t2", "classic": "", "unknown": ""}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Pool (-want +got):\n%s", diff)
	}
}

// TestADeletedQuotasUnitsKeepCountingInItsTree: units still running after
// their quota is deleted hold the nodes of its pool, so what they hold
// stays in the pool's books (under the quota's parent, or the pool's root
// when that is gone too), and the pool does not admit its capacity again.
func TestADeletedQuotasUnitsKeepCountingInItsTree(t *testing.T) {
	pool := []quota.Spec{
		qt.MakeSpec("a100").IsParent().TreeRoot("t1", "nvidia.com/gpu", "8").Max("nvidia.com/gpu", "8").Obj(),
		qt.MakeSpec("org").IsParent().Parent("a100").Tree("t1").Max("nvidia.com/gpu", "8").Obj(),
		qt.MakeSpec("team").Parent("org").Tree("t1").Max("nvidia.com/gpu", "8").Obj(),
		qt.MakeSpec("team2").Parent("org").Tree("t1").Max("nvidia.com/gpu", "8").Obj(),
		qt.MakeSpec("classic").Max("nvidia.com/gpu", "8").Obj(),
	}
	cases := []struct {
		name    string
		deleted []string
		// wantUsed is what each quota's subtree holds after the deletion.
		wantUsed map[string]string
	}{
		{
			name:     "the quota deleted: counted under its parent",
			deleted:  []string{"team"},
			wantUsed: map[string]string{"org": "8", "a100": "8", elasticquotav1alpha1.RootQuotaName: "0"},
		},
		{
			name:     "the quota and its parent deleted: counted under the tree's root",
			deleted:  []string{"team", "org"},
			wantUsed: map[string]string{"a100": "8", elasticquotav1alpha1.RootQuotaName: "0"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(t, qt.Res("nvidia.com/gpu", "16"), pool, []charge{{key: "ns/running", quota: "team", req: qt.Res("nvidia.com/gpu", "8")}})
			e.MarkLoaded()
			for _, name := range tc.deleted {
				e.DeleteQuota(name)
			}
			got := map[string]string{}
			for q := range tc.wantUsed {
				used := e.Used(q)[corev1.ResourceName("nvidia.com/gpu")]
				got[q] = used.String()
			}
			if diff := cmp.Diff(tc.wantUsed, got); diff != "" {
				t.Errorf("used (-want +got):\n%s", diff)
			}
			free, _, err := e.Headroom("team2", nil, nil)
			if tc.deleted[len(tc.deleted)-1] == "org" {
				free, _, err = e.Headroom("a100", nil, nil)
			}
			if err != nil {
				t.Fatal(err)
			}
			if gpu := e.ResourceList(free)[corev1.ResourceName("nvidia.com/gpu")]; !gpu.IsZero() {
				t.Errorf("the pool admits %s more GPUs while its 8 are held", gpu.String())
			}
			free, _, err = e.Headroom("classic", nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if gpu := e.ResourceList(free)[corev1.ResourceName("nvidia.com/gpu")]; gpu.String() != "8" {
				t.Errorf("the classic tree has %s GPUs free, want its 8", gpu.String())
			}
			e.Release("ns/running")
			if used := e.Used("a100")[corev1.ResourceName("nvidia.com/gpu")]; !used.IsZero() {
				t.Errorf("the pool holds %s GPUs once the unit is released", used.String())
			}
		})
	}
}
