package quota_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

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
