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
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"

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
		// Max names every resource min does, as Koordinator requires.
		switch rng.IntN(3) {
		case 0: // as large as the cluster: bounded by the parent and the cluster
			w.Max("cpu", fmt.Sprint(capCPU), "memory", fmt.Sprintf("%dGi", 4*capCPU))
		default:
			mx := max(minCPU+rng.IntN(capCPU), 1)
			w.Max("cpu", fmt.Sprint(mx), "memory", fmt.Sprintf("%dGi", 4*mx))
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
		t.specs[len(t.specs)-1].IsParent = true
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

// lenderTree is 2 to 4 quotas under the root with equal mins that add up to
// (nearly) the whole cluster, each free to borrow it all.
func lenderTree(rng *rand.Rand) tree {
	capCPU := 8 + rng.IntN(17)
	t := tree{capacity: qt.Res("cpu", fmt.Sprint(capCPU))}
	n := 2 + rng.IntN(3)
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("q%d", i)
		t.specs = append(t.specs, qt.MakeSpec(name).Min("cpu", fmt.Sprint(capCPU/n)).Max("cpu", fmt.Sprint(capCPU)).Obj())
		t.leaves = append(t.leaves, name)
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
	t       *testing.T
	rng     *rand.Rand
	s       *scheduler.Scheduler
	tree    tree
	units   map[string]*simUnit
	next    int
	now     time.Duration
	cfg     simConfig
	results []scheduler.Result
	// evictedBy[victim] = preemptors that evicted it since usage last
	// changed by a third party, to catch loops: two units evicting each
	// other while no usage changed but theirs. (Once a unit finishes, or
	// one that preempted nobody is admitted, what each quota borrows
	// changes, and reclaiming back what was reclaimed is right.)
	evictedBy map[string]map[string]bool
	// pendingPreemptor[victim] = the preemptor waiting for it to leave.
	pendingPreemptor map[string]string
	// gated queues use wait-for-pods-running, which may hold back even a
	// preemptor whose victims are gone (gatedNominated) until its gate opens.
	gated, gatedNominated map[string]bool
	// keys: every unit ever added (names_test.go).
	keys     map[string]bool
	failures []string
	// capacity is the cluster's capacity now, changed by the caps stream
	// (simConfig.capacityChanges); usedBefore is what the cluster held
	// when the running cycle started.
	capacity   corev1.ResourceList
	caps       *rand.Rand
	usedBefore corev1.ResourceList
	// parentQueues are the queues on parent quotas (the parents stream).
	parentQueues []string
	parents      *rand.Rand
}

// simConfig shapes a simulation.
type simConfig struct {
	// unitSize: every unit asks for exactly 1 cpu.
	unitSize bool
	// priorityOnly: every queue uses the Priority policy, without
	// wait-for-pods-running or starvation protection.
	priorityOnly bool
	// lenders: a flat tree of quotas whose mins add up to the whole
	// cluster, and units up to 3 cpu larger than a quota's min, so that
	// reclaim's victims are often larger than what their quota borrows.
	lenders bool
	// namespaces: units come from several namespaces, with names found
	// nowhere else, and every text the scheduler writes for a unit is
	// checked to name no unit of another namespace (names_test.go).
	namespaces bool
	// capacityChanges: the cluster's memory shrinks (nodes leave) and
	// grows back, so that a resource is over its limit on the chain of
	// units that do not ask for it; full again before the system settles.
	capacityChanges bool
	// madeUp: every unit also asks for 16 resource names of its own, which
	// no quota and no node names (resnames_test.go).
	madeUp bool
}

func newSim(t *testing.T, seed uint64, cfg simConfig) *sim {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	shape := randomTree
	if cfg.lenders {
		shape = lenderTree
	}
	sm := &sim{t: t, rng: rng, s: scheduler.New(), tree: shape(rng), units: map[string]*simUnit{},
		cfg: cfg, evictedBy: map[string]map[string]bool{}, gated: map[string]bool{}, keys: map[string]bool{},
		gatedNominated: map[string]bool{}, caps: rand.New(rand.NewPCG(seed, 0xca9ac17)),
		parents: rand.New(rand.NewPCG(seed, 0x9a7e47))}
	sm.capacity = sm.tree.capacity
	sm.s.SetClusterCapacity(sm.tree.capacity)
	for _, sp := range sm.tree.specs {
		sm.s.UpsertQuota(sp)
	}
	policies := []schedulingv1alpha1.QueuePolicy{schedulingv1alpha1.QueuePolicyPriority, schedulingv1alpha1.QueuePolicyBlock, schedulingv1alpha1.QueuePolicyIntelligent}
	// Preemption delays from a stream of their own, so the rest of each
	// seed's world is as before they existed: none, shorter than most
	// steps, longer than many.
	delays := rand.New(rand.NewPCG(seed, 0xde1a7))
	for _, leaf := range sm.tree.leaves {
		q := st.MakeQueue(leaf).Priority(int32(rng.IntN(3))).PreemptionDelay([]time.Duration{0, delay, 2 * time.Minute}[delays.IntN(3)])
		if !cfg.priorityOnly {
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
	// Queues on parent quotas too, from a stream of their own (each seed's
	// world is otherwise as before they existed): their units are charged
	// to a quota whose room and min also count what the quotas below hold.
	for _, sp := range sm.tree.specs {
		if !sp.IsParent || sm.parents.IntN(2) == 0 {
			continue
		}
		q := st.MakeQueue(sp.Name).Priority(int32(sm.parents.IntN(3))).PreemptionDelay([]time.Duration{0, delay, 2 * time.Minute}[sm.parents.IntN(3)])
		if sm.parents.IntN(2) == 0 {
			q.Preemption()
		}
		sm.s.UpsertQueue(q.Obj())
		sm.parentQueues = append(sm.parentQueues, sp.Name)
	}
	return sm
}

func (sm *sim) step() {
	sm.now += time.Duration(sm.rng.IntN(90)) * time.Second
	if sm.cfg.capacityChanges && sm.caps.IntN(6) == 0 {
		// A quarter to all of the cluster's memory.
		mem := sm.tree.capacity[corev1.ResourceMemory]
		sm.setCapacity(corev1.ResourceMemory, *resource.NewQuantity(mem.Value()*int64(1+sm.caps.IntN(4))/4, resource.BinarySI))
	}
	switch r := sm.rng.IntN(10); {
	case r < 5:
		sm.addUnit()
	case r < 7:
		if k := sm.pick(func(u *simUnit) bool { return u.admitted && !u.evicting }); k != "" {
			sm.s.DeleteUnit(k) // finished
			delete(sm.units, k)
			clear(sm.evictedBy)
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

// setCapacity changes one resource of the cluster's capacity.
func (sm *sim) setCapacity(name corev1.ResourceName, q resource.Quantity) {
	sm.capacity = sm.capacity.DeepCopy()
	if sm.capacity == nil {
		sm.capacity = corev1.ResourceList{}
	}
	sm.capacity[name] = q
	sm.s.SetClusterCapacity(sm.capacity)
}

func (sm *sim) addUnit() {
	sm.next++
	key := fmt.Sprintf("ns/u%03d", sm.next)
	if sm.cfg.namespaces {
		key = namespacedKey(sm.rng, sm.next)
	}
	queue := sm.tree.leaves[sm.rng.IntN(len(sm.tree.leaves))]
	if len(sm.parentQueues) > 0 && sm.parents.IntN(4) == 0 {
		queue = sm.parentQueues[sm.parents.IntN(len(sm.parentQueues))]
	}
	w := st.MakeUnit(key, queue).Priority(int32(sm.rng.IntN(8))).Enqueued(sm.now)
	switch {
	case sm.cfg.unitSize:
		w.Request("cpu", "1")
	case sm.cfg.lenders:
		mn := sm.tree.specs[0].Min[corev1.ResourceCPU]
		w.Request("cpu", fmt.Sprint(1+sm.rng.IntN(int(mn.Value())+3)))
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
	if sm.cfg.madeUp {
		u.unit.Request = withMadeUpNames(u.unit.Request, sm.next)
	}
	sm.units[u.unit.Key] = u
	sm.keys[u.unit.Key] = true
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
		if !u.admitted && !sm.s.IsAdmitted(k) && sm.waitingForNoVictims(k) {
			if sm.gated[u.unit.Queue] {
				sm.gatedNominated[k] = true // admitted first once its gate opens
			} else {
				nominated[k] = true
			}
		}
	}
	for k := range sm.gatedNominated {
		if u, ok := sm.units[k]; !ok || u.admitted {
			delete(sm.gatedNominated, k)
		}
	}
	patient := sm.coveredPatientHead(len(nominated) > 0 || len(sm.gatedNominated) > 0)
	sm.usedBefore = sm.s.Quotas().Used("koordinator-root-quota")
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
		preempted := false
		for v, p := range sm.pendingPreemptor {
			if p == a.Unit {
				delete(sm.pendingPreemptor, v) // its preemption is over
				preempted = true
			}
		}
		if !preempted {
			clear(sm.evictedBy)
		}
	}
	for k := range nominated {
		if !admitted[k] && !sm.shrunk(sm.units[k].unit.Request) {
			sm.failures = append(sm.failures, fmt.Sprintf("%s: its victims are gone but it was not admitted (it asks %v; %s)", k,
				sm.units[k].unit.Request, sm.s.WaitReason(k)))
		}
	}
	if sm.cfg.namespaces {
		sm.checkNames(res)
	}
	if patient != "" && !admitted[patient] {
		sm.failures = append(sm.failures, fmt.Sprintf("%s: waiting out its preemption delay, it is covered by what it holds and what is free, but not admitted", patient))
	}
	for _, p := range res.Preemptions {
		if p.Kind == scheduler.Reclaim {
			sm.checkVictimsBorrowed(p)
		}
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
	if scheduler.SharedPreemptStateWritten() {
		sm.failures = append(sm.failures, "a unit outside preemptions wrote the preemptState they share")
	}
	return res
}

// coveredPatientHead is the head, if any, the next cycle must admit before
// any queue's turn: the first head waiting out its preemption delay that
// is fed (patience.go), if what it holds and what is free in its quota now
// cover every resource it asks for. None when preemptors whose victims are
// gone come first (nominated), or the head's queue is gated.
func (sm *sim) coveredPatientHead(nominated bool) string {
	if nominated {
		return ""
	}
	now := st.T0.Add(sm.now)
	for _, h := range scheduler.PatientHeads(sm.s) {
		if !now.Before(h.Until) {
			continue // its delay is over: it is woken, to preempt in its turn
		}
		u := sm.units[h.Unit]
		if u == nil || len(u.unit.PodSets) > 0 || sm.gated[h.Queue] {
			return "" // partial admission, or a gate: not checked here
		}
		e := sm.s.Quotas()
		free, _, err := e.Headroom(h.Queue, nil, nil)
		if err != nil {
			return ""
		}
		// What preemptions in flight are owed is not free for it.
		gone, coming := sm.inFlight()
		after, err := e.HeadroomAfter(h.Queue, gone, coming, nil)
		if err != nil {
			return ""
		}
		for i := range free {
			free[i] = min(free[i], after[i])
		}
		held, _ := e.Charged(scheduler.ReservationKey(h.Unit))
		for i, r := range e.Vector(u.unit.Request) {
			var hi int64
			if i < len(held.Request) {
				hi = held.Request[i]
			}
			if r > 0 && hi+free[i] < r {
				return ""
			}
		}
		return h.Unit
	}
	return ""
}

// inFlight is, for the preemptions in flight, the victims still leaving
// and what their preemptors ask for beyond what they hold.
func (sm *sim) inFlight() (gone []string, coming []quota.Charge) {
	e := sm.s.Quotas()
	preemptors := map[string]bool{}
	for v, p := range sm.pendingPreemptor {
		if u, ok := sm.units[v]; ok && u.evicting {
			gone = append(gone, v)
		}
		preemptors[p] = true
	}
	for _, p := range slices.Sorted(maps.Keys(preemptors)) {
		u, ok := sm.units[p]
		if !ok || u.admitted {
			continue
		}
		held, _ := e.Charged(scheduler.ReservationKey(p))
		rest := e.Vector(u.unit.Request)
		for i := range rest {
			if i < len(held.Request) {
				rest[i] = max(rest[i]-held.Request[i], 0)
			}
		}
		coming = append(coming, quota.Charge{Quota: u.unit.Queue, Request: rest})
	}
	return gone, coming
}

// shrunk: the cluster has less than its full capacity of a resource the
// request asks for (its memory shrank): a preemptor's victims, chosen
// before, may no longer make room for it.
func (sm *sim) shrunk(request corev1.ResourceList) bool {
	for name, q := range request {
		if c, full := sm.capacity[name], sm.tree.capacity[name]; !q.IsZero() && c.Cmp(full) < 0 {
			return true
		}
	}
	return false
}

// checkVictimsBorrowed: a reclaim takes units only from quotas above their
// min (victims still hold their quota when the cycle returns), never from a
// quota within its min, however large the victim.
func (sm *sim) checkVictimsBorrowed(p scheduler.Preemption) {
	e := sm.s.Quotas()
	for _, v := range p.Victims {
		q := sm.units[v].unit.Queue
		used := e.Used(q)
		var min corev1.ResourceList
		for _, sp := range sm.tree.specs {
			if sp.Name == q {
				min = sp.Min
			}
		}
		above := false
		for name, want := range sm.units[v].unit.Request {
			if u := used[name]; !want.IsZero() && u.Cmp(min[name]) > 0 {
				above = true
			}
		}
		if !above {
			sm.failures = append(sm.failures, fmt.Sprintf("reclaim for %s took %s from quota %s, which is within its min (used %v, min %v)",
				p.Preemptor, v, q, used, min))
		}
	}
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
	for name, c := range sm.capacity {
		// Over a capacity that shrank, no cycle may add to it.
		if u, was := used[name], sm.usedBefore[name]; u.Cmp(c) > 0 && u.Cmp(was) > 0 {
			sm.failures = append(sm.failures, fmt.Sprintf("cluster: %s used %s (%s before the cycle), capacity %s", name, u.String(), was.String(), c.String()))
		}
	}
	// Every charge counts in its unit's namespace too: the namespaces
	// together hold what the cluster does.
	byNamespace := corev1.ResourceList{}
	e.NamespaceUsed(func(_ string, used corev1.ResourceList) {
		for name, q := range used {
			sum := byNamespace[name]
			sum.Add(q)
			byNamespace[name] = sum
		}
	})
	if !equality.Semantic.DeepEqual(byNamespace, used) {
		sm.failures = append(sm.failures, fmt.Sprintf("namespaces hold %v in all, the cluster %v", byNamespace, used))
	}
}

// settle reports every eviction done and cycles until nothing happens: the
// system must come to rest (no eviction loop keeps it busy). Like the
// controller, it cycles again at NextWakeup: a head waiting to preempt
// (koord-queue/preemption-delay) does so then.
func (sm *sim) settle() {
	for i := 0; i < 200; i++ {
		evicted := false
		for sm.evictOne() {
			evicted = true
		}
		res := sm.cycle()
		if !evicted && len(res.Admissions) == 0 && len(res.Preemptions) == 0 && !res.More {
			if res.NextWakeup.IsZero() {
				return
			}
			sm.now = res.NextWakeup.Sub(st.T0)
		}
	}
	sm.failures = append(sm.failures, "did not come to rest in 200 cycles")
}

func runSim(t *testing.T, seed uint64, cfg simConfig, steps int) *sim {
	sm := newSim(t, seed, cfg)
	sm.pendingPreemptor = map[string]string{}
	for i := 0; i < steps; i++ {
		sm.step()
	}
	if cfg.capacityChanges {
		sm.capacity = sm.tree.capacity
		sm.s.SetClusterCapacity(sm.capacity)
	}
	sm.settle()
	return sm
}

func checkSim(t *testing.T, seed uint64, cfg simConfig) {
	t.Helper()
	sm := runSim(t, seed, cfg, 150)
	sm.checkRestart()
	if len(sm.failures) > 0 {
		t.Fatalf("seed %d: %d failures, first: %s", seed, len(sm.failures), sm.failures[0])
	}
	if !cfg.priorityOnly {
		return
	}
	// At rest, no unit waits that its quota owes (its usage plus the unit
	// within the quota's min): reclaim got it what it was lent away. Only a
	// queue's head reclaims, so with units of mixed sizes a smaller owed
	// unit may wait behind a head that is not owed: check heads then.
	// Reclaim takes only from quotas that are not the head's ancestors, so
	// not what units charged to a quota above it hold: not checked then.
	e := sm.s.Quotas()
	for k, u := range sm.units {
		if u.admitted || !cfg.unitSize && sm.s.Position(k) != 1 || sm.aboveHolds(u.unit.Queue) {
			continue
		}
		q := u.unit.Queue
		if e.Err(q) == nil && e.WithinMin(q, e.Vector(u.unit.Request)) && sm.reclaimMakesRoom(u) {
			t.Fatalf("seed %d: %s waits though quota %s owes it (used %v, runtime %v): %s", seed, k, q,
				e.Used(q), e.Runtime(q), sm.s.WaitReason(k))
		}
	}
}

// reclaimMakesRoom: u would fit were every unit reclaim may take gone:
// the units of quotas outside u's chain that borrow, as Kueue judges it
// (the unit's quota, and each of its ancestors below the one it shares with
// u's, uses more than its min of a resource u asks for). A unit held back
// otherwise (by the idle min its quota's children do not lend, or by mins
// that add up to more than the cluster) is within its quota's min, but no
// reclaim can give it room.
func (sm *sim) reclaimMakesRoom(u *simUnit) bool {
	e := sm.s.Quotas()
	parent, specs := map[string]string{}, map[string]quota.Spec{}
	for _, sp := range sm.tree.specs {
		parent[sp.Name], specs[sp.Name] = sp.Parent, sp
	}
	chain := func(q string) map[string]bool {
		in := map[string]bool{}
		for ; q != ""; q = parent[q] {
			in[q] = true
		}
		return in
	}
	mine := chain(u.unit.Queue)
	borrows := func(q string) bool {
		used := e.Used(q)
		for name, r := range u.unit.Request {
			if r.IsZero() {
				continue
			}
			mn := specs[q].Min[name]
			if used.Name(name, resource.DecimalSI).Cmp(mn) > 0 {
				return true
			}
		}
		return false
	}
	var gone []string
	for k, o := range sm.units {
		if !o.admitted || mine[o.unit.Queue] || chain(o.unit.Queue)[u.unit.Queue] {
			continue
		}
		taken := true
		for q := o.unit.Queue; q != "" && !mine[q]; q = parent[q] {
			taken = taken && borrows(q)
		}
		if taken {
			gone = append(gone, k)
		}
	}
	after, err := e.HeadroomAfter(u.unit.Queue, gone, nil, nil)
	return err == nil && quota.Fits(e.Vector(u.unit.Request), after)
}

// aboveHolds: an admitted unit is charged to a quota above quota q (its
// queue is on a parent quota).
func (sm *sim) aboveHolds(q string) bool {
	parent := map[string]string{}
	for _, sp := range sm.tree.specs {
		parent[sp.Name] = sp.Parent
	}
	above := map[string]bool{}
	for p := parent[q]; p != ""; p = parent[p] {
		above[p] = true
	}
	for _, u := range sm.units {
		if u.admitted && above[u.unit.Queue] {
			return true
		}
	}
	return false
}

func TestPropertyInvariants(t *testing.T) {
	for seed := uint64(1); seed <= 60; seed++ {
		checkSim(t, seed, simConfig{})
	}
}

func TestPropertyOwedUnitsAreAdmittedOnceReclaimFinishes(t *testing.T) {
	for seed := uint64(1); seed <= 60; seed++ {
		checkSim(t, seed, simConfig{unitSize: true, priorityOnly: true})
	}
}

// TestPropertyOwedUnitsOfMixedSizes: the same for each queue's head, with
// units of mixed sizes, on random trees and on quotas that lend their whole
// min, where victims are often larger than what their quota borrows:
// reclaim may take them (their quota borrows before), and nothing loops.
func TestPropertyOwedUnitsOfMixedSizes(t *testing.T) {
	for seed := uint64(1); seed <= 60; seed++ {
		checkSim(t, seed, simConfig{priorityOnly: true})
		checkSim(t, seed, simConfig{priorityOnly: true, lenders: true})
	}
}

// TestPropertyPatientHeadsTakeWhatFrees: with the cluster's memory
// shrinking and growing back, so that memory is over on the chain of units
// that do not ask for it, the invariants hold, and a head waiting out its
// preemption delay is admitted as soon as what frees covers what it asks
// for (coveredPatientHead). More seeds than the others: a head held back
// by a resource it does not ask for is rare.
func TestPropertyPatientHeadsTakeWhatFrees(t *testing.T) {
	for seed := uint64(1); seed <= 200; seed++ {
		checkSim(t, seed, simConfig{capacityChanges: true})
		checkSim(t, seed, simConfig{unitSize: true, priorityOnly: true, capacityChanges: true})
	}
}

func TestPropertySameInputSameDecisions(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		a := runSim(t, seed, simConfig{}, 120).results
		b := runSim(t, seed, simConfig{}, 120).results
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
		checkSim(t, seed, simConfig{unitSize: unitSize, priorityOnly: unitSize})
		checkSim(t, seed, simConfig{priorityOnly: true, lenders: !unitSize})
		checkSim(t, seed, simConfig{unitSize: unitSize, priorityOnly: unitSize, capacityChanges: true})
	})
}

// TestPropertyPreemptorsKeepTheirRoom: seeds where a preemptor's victims
// were gone but it did not fit: while they left, a unit of a quota sharing
// a limit with the preemptor's (a child, a parent, the cluster) took its
// room, or a second preemption started that could not fit beside it.
func TestPropertyPreemptorsKeepTheirRoom(t *testing.T) {
	for _, tc := range []struct {
		seed uint64
		cfg  simConfig
	}{
		{164, simConfig{priorityOnly: true}},
		{452, simConfig{priorityOnly: true}},
		{495, simConfig{}},
		{530, simConfig{unitSize: true, priorityOnly: true, capacityChanges: true}},
		{1142, simConfig{}},
		{1400, simConfig{priorityOnly: true}},
	} {
		t.Run(fmt.Sprint(tc.seed), func(t *testing.T) {
			checkSim(t, tc.seed, tc.cfg)
		})
	}
}

// TestPropertyReclaimSparesHeldQuotas: seeds where a quota's usage counted
// a patient head's reservation (what it holds while it waits out its
// preemption delay), so that the quota seemed to borrow, and reclaim for
// another quota took its admitted units though they were within its min.
func TestPropertyReclaimSparesHeldQuotas(t *testing.T) {
	for _, seed := range []uint64{119, 152, 316, 487, 1093, 1235} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			checkSim(t, seed, simConfig{priorityOnly: true, lenders: true})
		})
	}
}
