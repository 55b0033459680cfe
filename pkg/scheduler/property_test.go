package scheduler_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/quota"
	qt "github.com/koord-queue/koord-queue/pkg/quota/quotatest"
	"github.com/koord-queue/koord-queue/pkg/scheduler"
	st "github.com/koord-queue/koord-queue/pkg/scheduler/schedtest"
)

// The property tests drive the scheduler with random quota trees and random
// unit streams through a simulated controller, and check after every cycle
// what must always hold. Each seed is a test case; go test runs a fixed,
// bounded set, and FuzzScheduler lets `go test -fuzz` look further.

// tree is a random but valid quota tree: mins fit the cluster and every
// parent's min covers its children's.
type tree struct {
	capacity corev1.ResourceList
	specs    []quota.Spec
	leaves   []string
}

func randomTree(rng *rand.Rand) tree {
	capCPU := 8 + rng.IntN(17)
	t := tree{capacity: qt.Res("cpu", fmt.Sprint(capCPU), "memory", fmt.Sprintf("%dGi", 4*capCPU))}
	var add func(name, parent string, budget, depth int)
	add = func(name, parent string, budget, depth int) {
		minCPU := 0
		if budget > 0 {
			minCPU = rng.IntN(budget + 1)
		}
		w := qt.MakeSpec(name).Parent(parent).Min("cpu", fmt.Sprint(minCPU), "memory", fmt.Sprintf("%dGi", 4*minCPU))
		switch rng.IntN(3) {
		case 0: // no max: bounded by the parent and the cluster
		default:
			mx := minCPU + rng.IntN(capCPU)
			w.Max("cpu", fmt.Sprint(max(mx, 1)))
		}
		if rng.IntN(5) == 0 {
			w.NoLending()
		}
		t.specs = append(t.specs, w.Obj())
		kids := 0
		if depth < 2 {
			kids = rng.IntN(3)
		}
		if kids == 0 {
			t.leaves = append(t.leaves, name)
			return
		}
		left := minCPU
		for i := 0; i < kids; i++ {
			share := 0
			if left > 0 {
				share = rng.IntN(left + 1)
			}
			left -= share
			add(fmt.Sprintf("%s-%d", name, i), name, share, depth+1)
		}
	}
	left := capCPU
	for i, n := 0, 1+rng.IntN(3); i < n; i++ {
		share := rng.IntN(left + 1)
		left -= share
		add(fmt.Sprintf("q%d", i), "", share, 0)
	}
	return t
}

type simUnit struct {
	unit     scheduler.Unit
	admitted bool
	evicting bool
}

// sim is a controller that applies every decision at once and reports
// evictions as done when the stream says so.
type sim struct {
	t        *testing.T
	rng      *rand.Rand
	s        *scheduler.Scheduler
	tree     tree
	units    map[string]*simUnit
	next     int
	now      time.Duration
	unitSize bool // every unit asks for exactly 1 cpu
	results  []scheduler.Result
	// evictedBy[victim] = preemptors that evicted it, to catch loops.
	evictedBy map[string]map[string]bool
	// pendingPreemptor[victim] = the preemptor waiting for it to leave.
	pendingPreemptor map[string]string
	// gated queues use wait-for-pods-running, which may hold back even a
	// preemptor whose victims are gone.
	gated    map[string]bool
	failures []string
}

func newSim(t *testing.T, seed uint64, unitSize, priorityOnly bool) *sim {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	sm := &sim{t: t, rng: rng, s: scheduler.New(), tree: randomTree(rng), units: map[string]*simUnit{},
		unitSize: unitSize, evictedBy: map[string]map[string]bool{}, gated: map[string]bool{}}
	sm.s.SetClusterCapacity(sm.tree.capacity)
	for _, sp := range sm.tree.specs {
		sm.s.UpsertQuota(sp)
	}
	policies := []schedulingv1alpha1.QueuePolicy{schedulingv1alpha1.QueuePolicyPriority, schedulingv1alpha1.QueuePolicyBlock, schedulingv1alpha1.QueuePolicyIntelligent}
	for _, leaf := range sm.tree.leaves {
		q := st.MakeQueue(leaf).Priority(int32(rng.IntN(3)))
		if !priorityOnly {
			q.Policy(policies[rng.IntN(len(policies))])
			if rng.IntN(4) == 0 {
				q.WaitForPodsRunning()
				sm.gated[leaf] = true
			}
			if rng.IntN(3) == 0 {
				q.LowMaxWait(time.Duration(1+rng.IntN(20)) * time.Minute)
			}
		}
		if rng.IntN(2) == 0 {
			q.Preemption()
			if rng.IntN(2) == 0 {
				q.PreemptRunning()
			}
		}
		sm.s.UpsertQueue(q.Obj())
	}
	return sm
}

func (sm *sim) step() {
	sm.now += time.Duration(sm.rng.IntN(90)) * time.Second
	switch r := sm.rng.IntN(10); {
	case r < 5:
		sm.addUnit()
	case r < 7:
		if k := sm.pick(func(u *simUnit) bool { return u.admitted && !u.evicting }); k != "" {
			sm.s.DeleteUnit(k) // finished
			delete(sm.units, k)
		}
	case r < 8:
		if k := sm.pick(func(u *simUnit) bool { return u.admitted && !u.unit.Running }); k != "" {
			u := sm.units[k]
			u.unit.Running = true
			sm.upsert(u)
		}
	case r < 9:
		sm.evictOne()
	default:
		if k := sm.pick(func(u *simUnit) bool { return !u.admitted }); k != "" {
			sm.s.DeleteUnit(k)
			delete(sm.units, k)
		}
	}
	sm.cycle()
}

func (sm *sim) addUnit() {
	sm.next++
	w := st.MakeUnit(fmt.Sprintf("ns/u%03d", sm.next), sm.tree.leaves[sm.rng.IntN(len(sm.tree.leaves))]).
		Priority(int32(sm.rng.IntN(8))).Enqueued(sm.now)
	switch {
	case sm.unitSize:
		w.Request("cpu", "1")
	case sm.rng.IntN(3) == 0:
		// Pod sets that may start with fewer pods (partial admission).
		for i := range 1 + sm.rng.IntN(2) {
			count := int32(1 + sm.rng.IntN(6))
			w.PodSet(fmt.Sprintf("set-%d", i), count, int32(sm.rng.IntN(int(count)+1)),
				"cpu", fmt.Sprintf("%dm", 500*(1+sm.rng.IntN(2))), "memory", fmt.Sprintf("%dGi", sm.rng.IntN(2)))
		}
	default:
		w.Request("cpu", fmt.Sprint(1+sm.rng.IntN(4)), "memory", fmt.Sprintf("%dGi", sm.rng.IntN(9)))
	}
	u := &simUnit{unit: w.Obj()}
	sm.units[u.unit.Key] = u
	sm.upsert(u)
}

func (sm *sim) upsert(u *simUnit) {
	if err := sm.s.UpsertUnit(u.unit); err != nil {
		sm.t.Fatalf("UpsertUnit: %v", err)
	}
}

// evictOne reports one victim gone: suspended, its pods deleted, back in
// its queue.
func (sm *sim) evictOne() bool {
	k := sm.pick(func(u *simUnit) bool { return u.evicting })
	if k == "" {
		return false
	}
	u := sm.units[k]
	u.admitted, u.evicting = false, false
	u.unit.Admitted, u.unit.Running, u.unit.Partial = false, false, nil
	sm.upsert(u)
	return true
}

func (sm *sim) pick(ok func(*simUnit) bool) string {
	var keys []string
	for k, u := range sm.units {
		if ok(u) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return ""
	}
	sort.Strings(keys)
	return keys[sm.rng.IntN(len(keys))]
}

func (sm *sim) cycle() scheduler.Result {
	nominated := map[string]bool{}
	for k, u := range sm.units {
		if !u.admitted && !sm.s.IsAdmitted(k) && sm.waitingForNoVictims(k) && !sm.gated[u.unit.Queue] {
			nominated[k] = true
		}
	}
	res := sm.s.Cycle(st.T0.Add(sm.now))
	sm.results = append(sm.results, res)
	for _, e := range res.Errors {
		sm.failures = append(sm.failures, fmt.Sprintf("%s in %s: %v", e.Unit, e.Queue, e.Err))
	}
	admitted := map[string]bool{}
	for _, a := range res.Admissions {
		u := sm.units[a.Unit]
		u.admitted, u.unit.Admitted, u.unit.AdmitTime = true, true, st.T0.Add(sm.now)
		// The controller writes the partial counts, and reports them with
		// every later change of the unit.
		u.unit.Partial = a.Partial
		sm.checkPartial(u.unit, a.Partial)
		admitted[a.Unit] = true
		for v, p := range sm.pendingPreemptor {
			if p == a.Unit {
				delete(sm.pendingPreemptor, v) // its preemption is over
			}
		}
	}
	for k := range nominated {
		if !admitted[k] {
			sm.failures = append(sm.failures, fmt.Sprintf("%s: its victims are gone but it was not admitted", k))
		}
	}
	for _, p := range res.Preemptions {
		for _, v := range p.Victims {
			if sm.evictedBy[p.Preemptor][v] {
				sm.failures = append(sm.failures, fmt.Sprintf("loop: %s evicts %s, which evicted it", p.Preemptor, v))
			}
			if sm.evictedBy[v] == nil {
				sm.evictedBy[v] = map[string]bool{}
			}
			sm.evictedBy[v][p.Preemptor] = true
			sm.units[v].evicting = true
			sm.pendingPreemptor[v] = p.Preemptor
		}
	}
	sm.checkLimits()
	return res
}

// checkPartial: a partial admission names only pod sets that may shrink,
// each with a count from its MinCount to below its Count.
func (sm *sim) checkPartial(u scheduler.Unit, partial map[string]int32) {
	for name, n := range partial {
		i := slices.IndexFunc(u.PodSets, func(ps scheduler.PodSet) bool { return ps.Name == name })
		if i < 0 || n < u.PodSets[i].MinCount || n >= u.PodSets[i].Count {
			sm.failures = append(sm.failures, fmt.Sprintf("%s admitted with %d pods of pod set %q: %+v", u.Key, n, name, u.PodSets))
		}
	}
}

// checkRestart: a scheduler restarted from the units as the controller
// reports them (admitted ones with their partial counts) charges each
// admitted unit exactly what this one does.
func (sm *sim) checkRestart() {
	fresh := scheduler.New()
	fresh.SetClusterCapacity(sm.tree.capacity)
	for _, sp := range sm.tree.specs {
		fresh.UpsertQuota(sp)
	}
	for _, k := range slices.Sorted(maps.Keys(sm.units)) {
		u := sm.units[k]
		if !u.admitted {
			continue
		}
		if err := fresh.UpsertUnit(u.unit); err != nil {
			sm.t.Fatalf("restart: UpsertUnit(%s): %v", k, err)
		}
		was, _ := sm.s.Quotas().Charged(k)
		now, _ := fresh.Quotas().Charged(k)
		if !slices.Equal(was.Request, now.Request) {
			sm.failures = append(sm.failures, fmt.Sprintf("restart: %s charged %v, was %v", k, now.Request, was.Request))
		}
	}
}

// waitingForNoVictims: the unit preempted, and every victim is gone.
func (sm *sim) waitingForNoVictims(k string) bool {
	found := false
	for v, p := range sm.pendingPreemptor {
		if p != k {
			continue
		}
		if u, ok := sm.units[v]; ok && u.evicting {
			return false
		}
		found = true
	}
	if found {
		for v, p := range sm.pendingPreemptor {
			if p == k {
				delete(sm.pendingPreemptor, v)
			}
		}
	}
	return found
}

// checkLimits: no quota over a max it names, the root within the cluster.
func (sm *sim) checkLimits() {
	e := sm.s.Quotas()
	for _, sp := range sm.tree.specs {
		used := e.Used(sp.Name)
		for name, mx := range sp.Max {
			if u := used[name]; u.Cmp(mx) > 0 {
				sm.failures = append(sm.failures, fmt.Sprintf("%s: %s used %s, max %s", sp.Name, name, u.String(), mx.String()))
			}
		}
	}
	used := e.Used("koordinator-root-quota")
	for name, c := range sm.tree.capacity {
		if u := used[name]; u.Cmp(c) > 0 {
			sm.failures = append(sm.failures, fmt.Sprintf("cluster: %s used %s, capacity %s", name, u.String(), c.String()))
		}
	}
}

// settle reports every eviction done and cycles until nothing happens: the
// system must come to rest (no eviction loop keeps it busy).
func (sm *sim) settle() {
	for i := 0; i < 200; i++ {
		evicted := false
		for sm.evictOne() {
			evicted = true
		}
		res := sm.cycle()
		if !evicted && len(res.Admissions) == 0 && len(res.Preemptions) == 0 && !res.More {
			return
		}
	}
	sm.failures = append(sm.failures, "did not come to rest in 200 cycles")
}

func runSim(t *testing.T, seed uint64, unitSize, priorityOnly bool, steps int) *sim {
	sm := newSim(t, seed, unitSize, priorityOnly)
	sm.pendingPreemptor = map[string]string{}
	for i := 0; i < steps; i++ {
		sm.step()
	}
	sm.settle()
	return sm
}

func checkSim(t *testing.T, seed uint64, unitSize, priorityOnly bool) {
	t.Helper()
	sm := runSim(t, seed, unitSize, priorityOnly, 150)
	sm.checkRestart()
	if len(sm.failures) > 0 {
		t.Fatalf("seed %d: %d failures, first: %s", seed, len(sm.failures), sm.failures[0])
	}
	if !unitSize || !priorityOnly {
		return
	}
	// At rest, no unit waits that its quota owes (its usage plus the unit
	// within the quota's min): reclaim got it what it was lent away.
	e := sm.s.Quotas()
	for k, u := range sm.units {
		if u.admitted {
			continue
		}
		q := u.unit.Queue
		if e.Err(q) == nil && e.WithinMin(q, e.Vector(u.unit.Request)) {
			t.Fatalf("seed %d: %s waits though quota %s owes it (used %v, runtime %v): %s", seed, k, q,
				e.Used(q), e.Runtime(q), sm.s.WaitReason(k))
		}
	}
}

func TestPropertyInvariants(t *testing.T) {
	for seed := uint64(1); seed <= 60; seed++ {
		checkSim(t, seed, false, false)
	}
}

func TestPropertyOwedUnitsAreAdmittedOnceReclaimFinishes(t *testing.T) {
	for seed := uint64(1); seed <= 60; seed++ {
		checkSim(t, seed, true, true)
	}
}

func TestPropertySameInputSameDecisions(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		a := runSim(t, seed, false, false, 120).results
		b := runSim(t, seed, false, false, 120).results
		if diff := cmp.Diff(a, b); diff != "" {
			t.Fatalf("seed %d: two runs differ (-first +second):\n%s", seed, diff)
		}
	}
}

// FuzzScheduler checks the invariants for any seed: go test -fuzz=FuzzScheduler.
func FuzzScheduler(f *testing.F) {
	for _, seed := range []uint64{1, 2, 3, 42} {
		f.Add(seed, false)
		f.Add(seed, true)
	}
	f.Fuzz(func(t *testing.T, seed uint64, unitSize bool) {
		checkSim(t, seed, unitSize, unitSize)
	})
}
