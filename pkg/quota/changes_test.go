package quota_test

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/quota"
	qt "github.com/koord-queue/koord-queue/pkg/quota/quotatest"
)

// TestTheQuotaWhoseChangeBreaksTheTreeRuleIsInvalid: Koordinator's webhook
// refuses the update that would take the children's mins above their
// parent's. Here the update has happened, so the quota whose change broke
// the rule is the one made invalid, never an unchanged sibling. Quotas
// loaded before the first cycle (a restart) have no known order of change:
// among them the newest are refused.
func TestTheQuotaWhoseChangeBreaksTheTreeRuleIsInvalid(t *testing.T) {
	p := func(min string) quota.Spec { return qt.MakeSpec("p").IsParent().Min("cpu", min).Max("cpu", "40").Obj() }
	kid := func(name string, created int64, min string) quota.Spec {
		return qt.MakeSpec(name).Parent("p").Min("cpu", min).Max("cpu", "40").Created(time.Unix(created, 0)).Obj()
	}
	aOld := func(min string) quota.Spec { return kid("a-old", 100, min) }
	bYoung := func(min string) quota.Spec { return kid("b-young", 200, min) }
	cases := []struct {
		name string
		// loaded before the first cycle, then deleted, then changed one
		// by one.
		loaded  []quota.Spec
		deleted []string
		changes []quota.Spec
		want    map[string]error
	}{
		{
			name:    "an old quota's raised min is the invalid one, not its unchanged younger sibling",
			loaded:  []quota.Spec{p("10"), aOld("5"), bYoung("5")},
			changes: []quota.Spec{aOld("8")},
			want:    map[string]error{"a-old": quota.ErrChildrenMinAboveMin},
		},
		{
			name:   "after a restart nobody knows who changed: the newest sibling is refused",
			loaded: []quota.Spec{p("10"), aOld("8"), bYoung("5")},
			want:   map[string]error{"b-young": quota.ErrChildrenMinAboveMin},
		},
		{
			name:    "a quota set back to the min it was valid with is valid again",
			loaded:  []quota.Spec{p("10"), aOld("5"), bYoung("5")},
			changes: []quota.Spec{aOld("8"), aOld("5")},
			want:    map[string]error{},
		},
		{
			name:    "two changes that each break the rule are both refused",
			loaded:  []quota.Spec{p("10"), aOld("5"), bYoung("5")},
			changes: []quota.Spec{aOld("8"), bYoung("6")},
			want:    map[string]error{"a-old": quota.ErrChildrenMinAboveMin, "b-young": quota.ErrChildrenMinAboveMin},
		},
		{
			name:    "a change that fitted stays valid when a later one breaks the rule",
			loaded:  []quota.Spec{p("20"), aOld("5"), bYoung("5")},
			changes: []quota.Spec{aOld("8"), kid("c", 300, "10")},
			want:    map[string]error{"c": quota.ErrChildrenMinAboveMin},
		},
		{
			name:    "a quota created after the load that does not fit is the invalid one, however old its creation time",
			loaded:  []quota.Spec{p("10"), aOld("5"), bYoung("4")},
			changes: []quota.Spec{kid("c", 50, "2")},
			want:    map[string]error{"c": quota.ErrChildrenMinAboveMin},
		},
		{
			name:    "a quota moved under a parent whose min it does not fit is the invalid one",
			loaded:  []quota.Spec{p("10"), aOld("5"), bYoung("4"), qt.MakeSpec("c").Min("cpu", "2").Max("cpu", "40").Created(time.Unix(50, 0)).Obj()},
			changes: []quota.Spec{kid("c", 50, "2")},
			want:    map[string]error{"c": quota.ErrChildrenMinAboveMin},
		},
		{
			name: "a quota refused where it moved keeps its room where it was valid, as the webhook would have kept it there",
			loaded: []quota.Spec{p("10"), aOld("5"), bYoung("5"),
				qt.MakeSpec("q").IsParent().Min("cpu", "10").Max("cpu", "40").Obj(),
				qt.MakeSpec("c").Parent("q").Min("cpu", "4").Max("cpu", "40").Obj()},
			changes: []quota.Spec{
				kid("c", 0, "4"),
				qt.MakeSpec("d").Parent("q").Min("cpu", "8").Max("cpu", "40").Obj(),
				qt.MakeSpec("c").Parent("q").Min("cpu", "4").Max("cpu", "40").Obj(),
			},
			want: map[string]error{"d": quota.ErrChildrenMinAboveMin},
		},
		{
			name:    "a parent created again with a min that does not hold its children's is the invalid one",
			loaded:  []quota.Spec{p("10"), aOld("5"), bYoung("5")},
			deleted: []string{"p"},
			changes: []quota.Spec{p("8")},
			want:    map[string]error{"p": quota.ErrChildrenMinAboveMin, "a-old": quota.ErrInvalidAncestor, "b-young": quota.ErrInvalidAncestor},
		},
		{
			name:    "a parent whose lowered min no longer holds its children's is the invalid one",
			loaded:  []quota.Spec{p("10"), aOld("5"), bYoung("5")},
			changes: []quota.Spec{p("8")},
			want:    map[string]error{"p": quota.ErrChildrenMinAboveMin, "a-old": quota.ErrInvalidAncestor, "b-young": quota.ErrInvalidAncestor},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(t, qt.Res("cpu", "40"), tc.loaded, nil)
			e.MarkLoaded()
			for _, name := range tc.deleted {
				e.DeleteQuota(name)
			}
			for _, s := range tc.changes {
				e.UpsertQuota(s)
			}
			if diff := cmp.Diff(tc.want, errorsOf(e), errorsMatch); diff != "" {
				t.Errorf("Errors (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTheInvalidQuotaSaysItsChangeBrokeTheRule: the message on the quota
// whose change broke the children's-mins rule (and so on its Queue and
// units) names the rule and says that its change is why.
func TestTheInvalidQuotaSaysItsChangeBrokeTheRule(t *testing.T) {
	p := qt.MakeSpec("p").IsParent().Min("cpu", "10").Max("cpu", "40").Obj()
	kid := func(name string, created int64, min string) quota.Spec {
		return qt.MakeSpec(name).Parent("p").Min("cpu", min).Max("cpu", "40").Created(time.Unix(created, 0)).Obj()
	}
	e := newEngine(t, qt.Res("cpu", "40"), []quota.Spec{p, kid("a-old", 100, "5"), kid("b-young", 200, "5")}, nil)
	e.MarkLoaded()
	e.UpsertQuota(kid("a-old", 100, "8"))
	want := map[string]string{
		"a-old": `quota "a-old": its change to a cpu min of 8 takes its siblings' mins to 13, over the min 10 of its parent "p", ` +
			`so this quota, whose change broke the rule, is not used until its min or its parent's is set so they fit: children's mins add up to more than the parent's min`,
		"b-young": "",
	}
	got := map[string]string{}
	for name := range want {
		got[name] = ""
		if err := e.Err(name); err != nil {
			got[name] = err.Error()
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Err (-want +got):\n%s", diff)
	}
}

// TestPropertyOnlyTheChangedQuotaTurnsInvalid changes random two-parent
// trees one quota at a time (a child's min, a child moved to the other
// parent, a parent's min, a child or a parent deleted or created) and
// checks after each
// change (and a child's max, now and then below its min): no quota but the
// changed one newly breaks the children's-mins rule; the children in use
// never have more min than their parent in use; and a restart, fed the
// quotas in any order, decides the same.
func TestPropertyOnlyTheChangedQuotaTurnsInvalid(t *testing.T) {
	parents := []string{"p", "q"}
	kids := []string{"k0", "k1", "k2", "k3", "k4", "k5"}
	for seed := uint64(1); seed <= 100; seed++ {
		rng := rand.New(rand.NewPCG(seed, 29))
		specs := map[string]quota.Spec{}
		parentSpec := func(name string) quota.Spec {
			return qt.MakeSpec(name).IsParent().Min("cpu", fmt.Sprint(2+rng.IntN(11))).Max("cpu", "100").Created(time.Unix(0, 0)).Obj()
		}
		kidSpec := func(name string) quota.Spec {
			return qt.MakeSpec(name).Parent(parents[rng.IntN(2)]).Min("cpu", fmt.Sprint(rng.IntN(6))).Max("cpu", "100").
				Created(time.Unix(int64(rng.IntN(1000)), 0)).Obj()
		}
		for _, p := range parents {
			specs[p] = parentSpec(p)
		}
		for _, k := range kids {
			specs[k] = kidSpec(k)
		}
		load := func() *quota.Engine {
			e := quota.NewEngine()
			e.SetClusterCapacity(qt.Res("cpu", "100"))
			for _, name := range shuffled(rng, slices.Sorted(maps.Keys(specs))) {
				e.UpsertQuota(specs[name])
			}
			e.MarkLoaded()
			return e
		}
		e := load()
		for step := range 40 {
			before := errorsOf(e)
			k := kids[rng.IntN(len(kids))]
			s, exists := specs[k]
			var changed, what string
			switch r := rng.IntN(6); {
			case r == 0:
				changed = parents[rng.IntN(2)]
				s, exists = specs[changed]
				switch {
				case !exists:
					s, what = parentSpec(changed), "created "+changed
				case rng.IntN(4) == 0:
					delete(specs, changed)
					e.DeleteQuota(changed)
					what = "deleted " + changed
				default:
					s.Min = qt.Res("cpu", fmt.Sprint(2+rng.IntN(11)))
					what = fmt.Sprintf("min of %s now %s", changed, s.Min.Cpu())
				}
			case !exists:
				changed, s, what = k, kidSpec(k), "created "+k
			case r == 1:
				delete(specs, k)
				e.DeleteQuota(k)
				changed, what = k, "deleted "+k
			case r == 2:
				s.Parent = map[string]string{"p": "q", "q": "p"}[s.Parent]
				changed, what = k, k+" moved under "+s.Parent
			case r == 3:
				// Now and then below its min: invalid on its own.
				s.Max = qt.Res("cpu", fmt.Sprint(rng.IntN(6)*20))
				changed, what = k, fmt.Sprintf("max of %s now %s", k, s.Max.Cpu())
			default:
				s.Min = qt.Res("cpu", fmt.Sprint(rng.IntN(6)))
				changed, what = k, fmt.Sprintf("min of %s now %s", k, s.Min.Cpu())
			}
			if !strings.HasPrefix(what, "deleted") {
				specs[changed] = s
				e.UpsertQuota(s)
			}
			after := errorsOf(e)
			for name, err := range after {
				if name != changed && errors.Is(err, quota.ErrChildrenMinAboveMin) && !errors.Is(before[name], quota.ErrChildrenMinAboveMin) {
					t.Fatalf("seed %d step %d (%s): %s, unchanged, turned invalid: %v", seed, step, what, name, err)
				}
			}
			for _, p := range parents {
				if _, ok := specs[p]; !ok || after[p] != nil {
					continue
				}
				var sum int64
				for _, s := range specs {
					if s.Parent == p && after[s.Name] == nil {
						sum += s.Min.Cpu().MilliValue()
					}
				}
				ps := specs[p]
				if limit := ps.Min.Cpu().MilliValue(); sum > limit {
					t.Fatalf("seed %d step %d (%s): the children of %s in use have %dm of min, over its %dm; errors: %v", seed, step, what, p, sum, limit, after)
				}
			}
			if step%5 != 4 {
				continue
			}
			if diff := cmp.Diff(messages(errorsOf(load())), messages(errorsOf(load()))); diff != "" {
				t.Fatalf("seed %d step %d (%s): two restarts decide differently (-first +second):\n%s", seed, step, what, diff)
			}
		}
	}
}

// errorsMatch compares errors by their sentinels: a want of
// quota.ErrCycle matches any error that wraps it.
var errorsMatch = cmp.Comparer(func(want, got error) bool { return errors.Is(got, want) || errors.Is(want, got) })

// errorsOf is e.Errors by quota.
func errorsOf(e *quota.Engine) map[string]error {
	out := map[string]error{}
	for _, qe := range e.Errors() {
		out[qe.Quota] = qe.Err
	}
	return out
}

func messages(errs map[string]error) map[string]string {
	out := map[string]string{}
	for name, err := range errs {
		out[name] = err.Error()
	}
	return out
}

func shuffled(rng *rand.Rand, names []string) []string {
	rng.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	return names
}

// TestPropertyChangesReadLateDecideAsReadAtOnce: while loading, the engine
// builds its tree only when it is read, so a start's quotas, fed without a
// read between them, are built together; once loaded, each change builds
// it. Two engines fed the same random changes (quotas created, edited,
// moved, deleted; a new resource named; the cluster's capacity; units
// charged and released; the load's end), one read after every change and
// one only now and then, must agree on every read of every quota, whichever
// read comes first.
func TestPropertyChangesReadLateDecideAsReadAtOnce(t *testing.T) {
	parents := []string{"p", "q"}
	kids := []string{"k0", "k1", "k2", "k3", "k4", "k5"}
	all := append(slices.Clone(parents), kids...)
	for seed := uint64(1); seed <= 100; seed++ {
		rng := rand.New(rand.NewPCG(seed, 31))
		resources := []string{"cpu", "memory", "nvidia.com/gpu"}
		limits := func(min bool) []string {
			var pairs []string
			for _, r := range resources[:1+rng.IntN(len(resources))] {
				amount := 1 + rng.IntN(10)
				if min {
					amount = rng.IntN(4)
				}
				pairs = append(pairs, r, fmt.Sprint(amount))
			}
			return pairs
		}
		spec := func(name string) quota.Spec {
			w := qt.MakeSpec(name).Max(limits(false)...).Min(limits(true)...).Created(time.Unix(int64(rng.IntN(1000)), 0))
			if slices.Contains(parents, name) {
				w.IsParent()
			} else if rng.IntN(4) > 0 {
				w.Parent(parents[rng.IntN(2)])
			}
			if rng.IntN(4) == 0 {
				w.NoLending()
			}
			return w.Obj()
		}
		atOnce, late := quota.NewEngine(), quota.NewEngine()
		both := func(change func(e *quota.Engine)) {
			change(atOnce)
			atOnce.Errors()
			change(late)
		}
		var charged []string
		for step := range 60 {
			name := all[rng.IntN(len(all))]
			var what string
			switch r := rng.IntN(10); {
			case r == 0:
				capacity := qt.Res("cpu", fmt.Sprint(rng.IntN(40)), "memory", fmt.Sprint(rng.IntN(40)))
				both(func(e *quota.Engine) { e.SetClusterCapacity(capacity) })
				what = "capacity " + fmt.Sprint(capacity)
			case r == 1:
				both(func(e *quota.Engine) { e.DeleteQuota(name) })
				what = "deleted " + name
			case r == 2 && step > 10:
				// The load ends (the first cycle) after a dozen changes
				// or more; changes seen after it are weighed in order.
				both(func(e *quota.Engine) { e.MarkLoaded() })
				what = "loaded"
			case r == 3 && len(charged) > 0:
				key := charged[rng.IntN(len(charged))]
				both(func(e *quota.Engine) { e.Release(key) })
				what = "released " + key
			case r == 4:
				req := atOnce.Vector(qt.Res("cpu", fmt.Sprint(rng.IntN(3)), "nvidia.com/gpu", fmt.Sprint(rng.IntN(2))))
				key := fmt.Sprintf("u%d", step)
				free, _, err := atOnce.Headroom(name, nil, nil)
				if err != nil || !quota.Fits(req, free) {
					continue
				}
				both(func(e *quota.Engine) {
					if err := e.Charge(quota.Charge{Key: key, Quota: name, Request: req}); err != nil {
						t.Fatalf("seed %d step %d: charging %s to %s: %v", seed, step, key, name, err)
					}
				})
				charged = append(charged, key)
				what = "charged " + key + " to " + name
			default:
				s := spec(name)
				both(func(e *quota.Engine) { e.UpsertQuota(s) })
				what = fmt.Sprintf("upserted %+v", s)
			}
			if rng.IntN(4) > 0 {
				continue // late is not read
			}
			// Each read comes first now and then: every one must build the
			// tree it reads.
			req := atOnce.Vector(qt.Res("cpu", "1", "nvidia.com/gpu", "1"))
			quotas := append([]string{elasticquotav1alpha1.RootQuotaName}, all...)
			anyUnit := func(string) bool { return true }
			reads := []struct {
				name string
				read func(e *quota.Engine, q string) any
			}{
				{"Errors", func(e *quota.Engine, _ string) any { return messages(errorsOf(e)) }},
				{"Err", func(e *quota.Engine, q string) any { return fmt.Sprint(e.Err(q)) }},
				{"Parent", func(e *quota.Engine, q string) any { return e.Parent(q) }},
				{"TreeRoot", func(e *quota.Engine, q string) any { return e.TreeRoot(q) }},
				{"Capacity", func(e *quota.Engine, q string) any { return e.Capacity(q) }},
				{"Pool", func(e *quota.Engine, q string) any { return e.Pool(q) }},
				{"Ancestors", func(e *quota.Engine, q string) any {
					var names []string
					e.Ancestors(q, func(name string) { names = append(names, name) })
					return names
				}},
				{"Used", func(e *quota.Engine, q string) any { return e.Used(q) }},
				{"UsedVector", func(e *quota.Engine, q string) any { return slices.Clone(e.UsedVector(q)) }},
				{"Runtime", func(e *quota.Engine, q string) any { return e.Runtime(q) }},
				{"DominantShare", func(e *quota.Engine, q string) any { return e.DominantShare(q) }},
				{"WithinMin", func(e *quota.Engine, q string) any { return e.WithinMin(q, req) }},
				{"Borrowing", func(e *quota.Engine, q string) any { return e.Borrowing(q) }},
				{"ChainState", func(e *quota.Engine, q string) any { return string(e.ChainState(q, nil)) }},
				{"Explain", func(e *quota.Engine, q string) any { return e.Explain(q, req) }},
				{"NeverFits", func(e *quota.Engine, q string) any { return e.NeverFits(q, req) }},
				{"Headroom", func(e *quota.Engine, q string) any {
					free, binding, err := e.Headroom(q, nil, nil)
					return fmt.Sprint(free, binding, err)
				}},
				{"HeadroomAfter", func(e *quota.Engine, q string) any {
					free, err := e.HeadroomAfter(q, charged, nil, nil)
					return fmt.Sprint(free, err)
				}},
				{"ReclaimVictims", func(e *quota.Engine, q string) any {
					victims, ok := e.ReclaimVictims(q, req, anyUnit)
					return fmt.Sprint(victims, ok)
				}},
				{"LowerPriorityVictims", func(e *quota.Engine, q string) any {
					victims, ok := e.LowerPriorityVictims(q, req, 1000, anyUnit)
					return fmt.Sprint(victims, ok)
				}},
			}
			rng.Shuffle(len(reads), func(i, j int) { reads[i], reads[j] = reads[j], reads[i] })
			for _, r := range reads {
				for _, q := range quotas {
					if diff := cmp.Diff(r.read(atOnce, q), r.read(late, q)); diff != "" {
						t.Fatalf("seed %d step %d (%s): %s(%s) differs (-read at once +read late):\n%s", seed, step, what, r.name, q, diff)
					}
				}
			}
		}
	}
}

// TestARefusedMinChangeTakesNothingFromItsSiblings: the webhook would have
// refused the change that broke the children's-mins rule and kept the
// quota as it was, so its refused min neither keeps room from a sibling
// (the floor of a quota that does not lend) nor shields what it borrows
// from a sibling's reclaim.
func TestARefusedMinChangeTakesNothingFromItsSiblings(t *testing.T) {
	p := qt.MakeSpec("p").IsParent().Min("cpu", "10").Max("cpu", "10").Obj()
	// a is the younger, so that a restart refuses it too.
	created := map[string]int64{"a": 200, "b": 100}
	kid := func(name, min string) *qt.SpecWrapper {
		return qt.MakeSpec(name).Parent("p").Min("cpu", min).Max("cpu", "10").Created(time.Unix(created[name], 0))
	}
	cases := []struct {
		name    string
		loaded  []quota.Spec
		charges []charge
		change  quota.Spec
		// wantHeadroom is b's headroom in cpu; wantVictims what b, asking
		// 5 cpu, may reclaim.
		wantHeadroom string
		wantVictims  []string
	}{
		{
			name:         "a non-lending quota's refused raise keeps no more of its min from its sibling",
			loaded:       []quota.Spec{p, kid("a", "5").NoLending().Obj(), kid("b", "5").Obj()},
			change:       kid("a", "8").NoLending().Obj(),
			wantHeadroom: "5",
		},
		{
			name:         "a borrower's refused raise does not shield what it borrows from reclaim",
			loaded:       []quota.Spec{p, kid("a", "5").Obj(), kid("b", "5").Obj()},
			charges:      []charge{{key: "ns/borrowing", quota: "a", req: qt.Res("cpu", "7")}},
			change:       kid("a", "8").Obj(),
			wantHeadroom: "3",
			wantVictims:  []string{"ns/borrowing"},
		},
		{
			name:         "a quota moved in keeps only what its new siblings leave",
			loaded:       []quota.Spec{p, kid("b", "5").Obj(), qt.MakeSpec("a").Min("cpu", "8").Max("cpu", "10").NoLending().Created(time.Unix(200, 0)).Obj()},
			change:       kid("a", "8").NoLending().Obj(),
			wantHeadroom: "5",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			live := newEngine(t, qt.Res("cpu", "40"), tc.loaded, tc.charges)
			live.MarkLoaded()
			live.UpsertQuota(tc.change)
			// A restarted koord-queue, which reads the quotas as they are
			// with no history, keeps the same mins.
			var specs []quota.Spec
			for _, s := range tc.loaded {
				if s.Name != tc.change.Name {
					specs = append(specs, s)
				}
			}
			restarted := newEngine(t, qt.Res("cpu", "40"), append(specs, tc.change), tc.charges)
			restarted.MarkLoaded()
			for name, e := range map[string]*quota.Engine{"live": live, "restarted": restarted} {
				t.Run(name, func(t *testing.T) { checkSiblingB(t, e, tc.wantHeadroom, tc.wantVictims) })
			}
		})
	}
}

// checkSiblingB checks b's headroom (in cpu) and what it may reclaim,
// asking 5 cpu, beside a whose min change was refused.
func checkSiblingB(t *testing.T, e *quota.Engine, wantHeadroom string, wantVictims []string) {
	t.Helper()
	{
		{
			if !errors.Is(e.Err("a"), quota.ErrChildrenMinAboveMin) {
				t.Fatalf("a's error: %v, want its change refused", e.Err("a"))
			}
			free, _, err := e.Headroom("b", nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			cpu := e.ResourceList(free)[corev1.ResourceCPU]
			if diff := cmp.Diff(wantHeadroom, cpu.String()); diff != "" {
				t.Errorf("b's headroom (-want +got):\n%s", diff)
			}
			victims, _ := e.ReclaimVictims("b", e.Vector(qt.Res("cpu", "5")), func(string) bool { return true })
			if diff := cmp.Diff(wantVictims, victims); diff != "" {
				t.Errorf("b's reclaim victims (-want +got):\n%s", diff)
			}
		}
	}
}
