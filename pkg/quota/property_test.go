package quota_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/quota"
	qt "github.com/koord-queue/koord-queue/pkg/quota/quotatest"
)

// TestPropertyHeadroomIsSafeAndTight charges random requests into random
// trees, each only if Headroom says it fits, and checks: no quota ever
// exceeds a max it names (also after a charge shrinks with Resize), the root
// never exceeds the cluster, Explain agrees with Headroom, and releasing
// everything returns usage to zero.
func TestPropertyHeadroomIsSafeAndTight(t *testing.T) {
	for seed := uint64(1); seed <= 200; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		capacity, specs, names := randomTree(rng)
		e := newEngine(t, capacity, specs, nil)
		var charged []string
		for i := 0; i < 60; i++ {
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
				continue
			}
			key := fmt.Sprintf("u%d", i)
			if err := e.Charge(quota.Charge{Key: key, Quota: q, Request: req}); err != nil {
				t.Fatal(err)
			}
			charged = append(charged, key)
			checkWithin(t, seed, e, specs, capacity)
			switch rng.IntN(4) {
			case 0:
				k := charged[rng.IntN(len(charged))]
				e.Release(k)
			case 1:
				// Shrinking a charge keeps every quota within its limits.
				k := charged[rng.IntN(len(charged))]
				if c, ok := e.Charged(k); ok {
					smaller := make(quota.Vector, len(c.Request))
					for j, a := range c.Request {
						smaller[j] = rng.Int64N(a + 1)
					}
					if err := e.Resize(k, smaller); err != nil {
						t.Fatalf("seed %d: Resize(%s): %v", seed, k, err)
					}
					checkWithin(t, seed, e, specs, capacity)
				}
			}
		}
		for _, k := range charged {
			e.Release(k)
		}
		if used := e.Used(elasticquotav1alpha1.RootQuotaName); len(used) != 0 {
			t.Fatalf("seed %d: usage left after releasing everything: %v", seed, used)
		}
	}
}

// TestPropertyDrainChangedCoversHeadroom: a quota's headroom follows from
// its own usage and its parent's ChainState, so a quota DrainChanged does
// not list, whose parent's ChainState is as it was, has the usage (which
// WithinMin reads) and the headroom (and binding quotas) it had, whatever
// was charged, released or resized anywhere in the tree. The scheduler's
// settled queues rely on it.
func TestPropertyDrainChangedCoversHeadroom(t *testing.T) {
	type view struct {
		used, free quota.Vector
		binding    []string
		state      string
	}
	for seed := uint64(1); seed <= 200; seed++ {
		rng := rand.New(rand.NewPCG(seed, 11))
		capacity, specs, names := randomTree(rng)
		e := newEngine(t, capacity, specs, nil)
		look := func() map[string]view {
			out := map[string]view{}
			for _, q := range names {
				free, binding, err := e.Headroom(q, nil, nil)
				if err != nil {
					continue
				}
				out[q] = view{slices.Clone(e.UsedVector(q)), free, binding, string(e.ChainState(e.Parent(q), nil))}
			}
			return out
		}
		var charged []string
		e.DrainChanged(nil)
		for i := 0; i < 80; i++ {
			before := look()
			what := ""
			switch r := rng.IntN(3); {
			case r == 0 || len(charged) == 0:
				// Whether it fits or not: restored units are charged
				// whatever they hold.
				key, q := fmt.Sprintf("u%d", i), names[rng.IntN(len(names))]
				req := e.Vector(qt.Res("cpu", fmt.Sprint(rng.IntN(4)), "memory", fmt.Sprintf("%dGi", rng.IntN(4))))
				if err := e.Charge(quota.Charge{Key: key, Quota: q, Request: req}); err != nil {
					t.Fatal(err)
				}
				charged = append(charged, key)
				what = fmt.Sprintf("charge %v to %s", req, q)
			case r == 1:
				k := charged[rng.IntN(len(charged))]
				c, _ := e.Charged(k)
				e.Release(k)
				what = fmt.Sprintf("release %v from %s", c.Request, c.Quota)
			default:
				k := charged[rng.IntN(len(charged))]
				c, ok := e.Charged(k)
				if !ok {
					continue
				}
				bigger := make(quota.Vector, len(c.Request))
				for j := range bigger {
					bigger[j] = rng.Int64N(4000)
				}
				if err := e.Resize(k, bigger); err != nil {
					t.Fatalf("seed %d: Resize(%s): %v", seed, k, err)
				}
				what = fmt.Sprintf("resize %v to %v in %s", c.Request, bigger, c.Quota)
			}
			listed := map[string]bool{}
			for _, q := range e.DrainChanged(nil) {
				listed[q] = true
			}
			for q, now := range look() {
				was, ok := before[q]
				if !ok || listed[q] || now.state != was.state {
					continue
				}
				if diff := cmp.Diff(was, now, cmp.AllowUnexported(view{})); diff != "" {
					t.Fatalf("seed %d, step %d (%s): %s is not listed and its parent's ChainState is as it was, but its usage or headroom changed (-before +after):\n%s",
						seed, i, what, q, diff)
				}
			}
		}
	}
}

// randomTree is a random cluster capacity and quota tree, as many quotas
// lending as not, some in error (a min breaking Koordinator's rules).
func randomTree(rng *rand.Rand) (corev1.ResourceList, []quota.Spec, []string) {
	capacity := qt.Res("cpu", fmt.Sprint(4+rng.IntN(20)), "memory", fmt.Sprintf("%dGi", 4+rng.IntN(40)))
	var specs []quota.Spec
	names := []string{}
	for i := 0; i < 2+rng.IntN(6); i++ {
		name := fmt.Sprintf("q%d", i)
		w := qt.MakeSpec(name)
		if len(names) > 0 && rng.IntN(2) == 0 {
			p := rng.IntN(len(names))
			w.Parent(names[p])
			specs[p].IsParent = true
		}
		maxCPU := ""
		if rng.IntN(2) == 0 {
			maxCPU = fmt.Sprint(1 + rng.IntN(10))
			w.Max("cpu", maxCPU)
		}
		if rng.IntN(3) == 0 {
			// A min needs its resource in max (Koordinator's rule).
			w.Min("memory", fmt.Sprintf("%dGi", rng.IntN(3))).NoLending()
			if maxCPU != "" {
				w.Max("cpu", maxCPU, "memory", "4Gi")
			} else {
				w.Max("memory", "4Gi")
			}
		}
		specs = append(specs, w.Obj())
		names = append(names, name)
	}
	return capacity, specs, names
}

func checkWithin(t *testing.T, seed uint64, e *quota.Engine, specs []quota.Spec, capacity corev1.ResourceList) {
	t.Helper()
	for _, s := range specs {
		used := e.Used(s.Name)
		for name, mx := range s.Max {
			if u := used[name]; u.Cmp(mx) > 0 {
				t.Fatalf("seed %d: %s uses %s %s, max %s", seed, s.Name, name, u.String(), mx.String())
			}
		}
	}
	used := e.Used(elasticquotav1alpha1.RootQuotaName)
	for name, c := range capacity {
		if u := used[name]; u.Cmp(c) > 0 {
			t.Fatalf("seed %d: cluster uses %s %s of %s", seed, name, u.String(), c.String())
		}
	}
}
