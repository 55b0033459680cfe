package admission

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/koord-queue/koord-queue/apis"
	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/patch"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
	"github.com/koord-queue/koord-queue/pkg/quota"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/pkg/watched"
)

// The writer-aware property test. pkg/scheduler's property test applies
// every decision at once; this one runs the real Cache, Loop and Writer
// over controller-runtime's fake client, one step at a time, in an order a
// seed picks: writes are made late and out of order, the informer delivers
// late and out of order, writes time out (after landing or before), the
// unit cannot be read back, and between any two steps units are resized
// (also while they hold quota, as a resize that raced an admission would),
// deactivated, deleted, moved to another quota or finished, a quota's max
// shrinks below its usage, a quota's min changes or its lending is turned
// on or off, a node is lost or turns NotReady (and comes back), the root
// quota's max caps the cluster or shrinks, and koord-queue restarts. After
// every step the API server's state is checked:
//   - no quota's room is overrun further: what a quota occupies as seen
//     from its parent (its usage, or its min if it does not lend and uses
//     less) does not grow while over its max, nor the top quotas' total
//     while over the cluster's capacity (the root's max if it has one);
//   - no unit is admitted twice (its attempts grow by one per admission);
//   - the Cache's counts are never negative;
//   - writes per unit stay bounded (no livelock).
// Then the world calms down (no faults, no changes) and must settle within
// a bounded number of steps on a state a fresh koord-queue would not change:
// every unit owed quota has it.

// quotaTree: parent p1 (max 8 cpu) over a and b (b does not lend), parent
// p2 (max 4) over c; and a node pool's quota tree t1, of 6 cpu (its root's
// total-resource), whose root pool holds d; nodes of 8 and 6 cpu, of which
// the classic tree has what the pool leaves.
var quotaTree = []propQuotaSpec{
	{"p1", "", 4, 8, false, ""}, {"a", "p1", 2, 6, false, ""}, {"b", "p1", 2, 8, true, ""},
	{"p2", "", 4, 4, false, ""}, {"c", "p2", 4, 4, false, ""},
	{"pool", "", 0, 8, false, "t1"}, {"d", "pool", 0, 6, false, "t1"},
}

// propQuotaSpec is a quota of quotaTree.
type propQuotaSpec struct {
	name, parent string
	min, max     int64
	noLending    bool
	// tree is the quota tree's id, for the pool's quotas.
	tree string
}

// propQuotaNamed is the quota of quotaTree called name.
func propQuotaNamed(name string) (propQuotaSpec, bool) {
	i := slices.IndexFunc(quotaTree, func(q propQuotaSpec) bool { return q.name == name })
	if i < 0 {
		return propQuotaSpec{}, false
	}
	return quotaTree[i], true
}

// poolTotal is the pool's total-resource, in cpu.
const poolTotal = 6

var leafQuotas = []string{"a", "b", "c", "d"}

// deletable are the quotas the world deletes, and makes again, while units
// hold them.
var deletable = []string{"a", "d"}

var propNodes = []struct {
	name string
	cpu  string
}{{"n1", "8"}, {"n2", "6"}}

type propWorld struct {
	t testing.TB
	// wakeup is when the loop's last cycle asked to run again, zero if
	// never.
	wakeup time.Time
	rng    *rand.Rand
	clock  *clocktesting.FakeClock
	api    client.WithWatch // the API server
	// faults: the writer's writes fail now and then.
	faults bool

	cache  *Cache
	writer *Writer
	loop   *Loop
	// pending are the writes handed over by the loop and not yet made.
	pending []op
	// flights are writes the writer has taken and sent, not yet answered:
	// each waits at the API server's door until landOne lets it through.
	flights []*flight
	// pause, when set, is the flight whose next write waits at the door.
	pause *flight
	// pods of the units' jobs, by name: one per job a unit admitted runs
	// (made at its first follow), asking what the unit was admitted with.
	// Once the job is evicted, finishes or its unit is deleted, its pod is
	// being deleted and stays on its node until podGoes takes it.
	pods map[string]*propPod
	// undelivered units (keys) whose latest state the informer has yet to
	// bring to the Cache.
	undelivered map[string]bool

	nextUnit int
	// seen counts what happened, to show what a seed exercised.
	seen map[string]int
	// recent steps, for a failure's report.
	recent  []string
	writes  map[string]int // koord-queue's writes per unit
	changes map[string]int // the world's changes per unit
	// last step's view, for the invariants.
	attempts map[string]int64
	holds    map[string]bool
	// direct is what the units charged to each quota hold.
	direct map[string]int64
}

// propRoom is the room the API server's objects give: each quota's max and
// parent, the mins kept by quotas that do not lend, and the cluster's
// capacity (the root's max).
type propRoom struct {
	names  []string // children before parents
	parent map[string]string
	max    map[string]int64
	floor  map[string]int64
}

func (w *propWorld) room() propRoom {
	ctx := context.Background()
	r := propRoom{parent: map[string]string{}, max: map[string]int64{}, floor: map[string]int64{}}
	for i := len(quotaTree) - 1; i >= 0; i-- {
		q := quotaTree[i]
		r.names = append(r.names, q.name)
		r.parent[q.name] = cmp.Or(q.parent, elasticquotav1alpha1.RootQuotaName)
		if q.tree != "" && q.parent == "" {
			r.parent[q.name] = "" // a tree's root: counted in its tree only
		}
		eq := &elasticquotav1alpha1.ElasticQuota{}
		if err := w.api.Get(ctx, client.ObjectKey{Namespace: "quotas", Name: q.name}, eq); apierrors.IsNotFound(err) {
			r.max[q.name] = math.MaxInt64 // deleted: its units count where it was
			continue
		} else {
			w.must(err)
		}
		r.max[q.name] = eq.Spec.Max.Cpu().Value()
		if q.tree != "" && q.parent == "" {
			r.max[q.name] = min(r.max[q.name], poolTotal)
		}
		w.cache.mu.Lock()
		refused := errors.Is(w.cache.core.Quotas().Err(q.name), quota.ErrChildrenMinAboveMin)
		w.cache.mu.Unlock()
		if eq.Labels[elasticquotav1alpha1.LabelAllowLentResource] == "false" && !refused {
			// A min change the children's-mins rule refused keeps no
			// floor (the engine keeps the min last valid, which the API
			// server no longer shows).
			r.floor[q.name] = eq.Spec.Min.Cpu().Value()
		}
	}
	root := &elasticquotav1alpha1.ElasticQuota{}
	if err := w.api.Get(ctx, client.ObjectKey{Namespace: "quotas", Name: elasticquotav1alpha1.RootQuotaName}, root); err == nil {
		r.max[elasticquotav1alpha1.RootQuotaName] = root.Spec.Max.Cpu().Value()
	} else {
		w.must(client.IgnoreNotFound(err))
		nodes := &corev1.NodeList{}
		w.must(w.api.List(ctx, nodes))
		for i := range nodes.Items {
			capacity := watched.NodeCapacity(&nodes.Items[i])
			r.max[elasticquotav1alpha1.RootQuotaName] += capacity.Cpu().Value()
		}
		// What the pool's tree has is taken out of the classic tree.
		r.max[elasticquotav1alpha1.RootQuotaName] = max(0, r.max[elasticquotav1alpha1.RootQuotaName]-poolTotal)
	}
	return r
}

// occupied is what each quota occupies as seen from its parent, as the
// quota engine weighs it: max(its floor, its units' and its children's).
func (r propRoom) occupied(direct map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for _, q := range r.names {
		out[q] = max(r.floor[q], out[q]+direct[q])
		out[r.parent[q]] += out[q]
	}
	return out
}

// used is what units charged to q and its descendants hold.
func (r propRoom) used(direct map[string]int64, q string) int64 {
	used := direct[q]
	for _, k := range r.names {
		if r.parent[k] == q {
			used += r.used(direct, k)
		}
	}
	return used
}

// emptyPropWorld is seed's world with nothing in its API server yet.
func emptyPropWorld(t testing.TB, seed int64) *propWorld {
	scheme := runtime.NewScheme()
	if err := apis.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return &propWorld{
		t: t, rng: rand.New(rand.NewSource(seed)), clock: clocktesting.NewFakeClock(time.Unix(1_000_000, 0)),
		api:         fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&schedulingv1alpha1.QueueUnit{}, &schedulingv1alpha1.Queue{}).Build(),
		undelivered: map[string]bool{}, seen: map[string]int{}, writes: map[string]int{}, changes: map[string]int{}, pods: map[string]*propPod{},
		attempts: map[string]int64{}, holds: map[string]bool{}, direct: map[string]int64{},
	}
}

// propQuota is the ElasticQuota of quotaTree called name, as created.
func propQuota(name string) *elasticquotav1alpha1.ElasticQuota {
	q, _ := propQuotaNamed(name)
	eq := &elasticquotav1alpha1.ElasticQuota{ObjectMeta: metav1.ObjectMeta{Namespace: "quotas", Name: q.name, Labels: map[string]string{}},
		Spec: elasticquotav1alpha1.ElasticQuotaSpec{Min: cpu(q.min), Max: cpu(q.max)}}
	switch {
	case q.parent != "":
		eq.Labels[elasticquotav1alpha1.LabelQuotaParent] = q.parent
	case q.tree != "":
		eq.Labels[elasticquotav1alpha1.LabelQuotaIsParent] = "true"
		eq.Labels[elasticquotav1alpha1.LabelQuotaIsRoot] = "true"
		eq.Labels[elasticquotav1alpha1.LabelQuotaParent] = elasticquotav1alpha1.RootQuotaName
		eq.Annotations = map[string]string{elasticquotav1alpha1.AnnotationTotalResource: fmt.Sprintf(`{"cpu":"%d"}`, poolTotal)}
	default:
		eq.Labels[elasticquotav1alpha1.LabelQuotaIsParent] = "true"
	}
	if q.tree != "" {
		eq.Labels[elasticquotav1alpha1.LabelQuotaTreeID] = q.tree
	}
	if q.noLending {
		eq.Labels[elasticquotav1alpha1.LabelAllowLentResource] = "false"
	}
	return eq
}

// createQuotasAndNodes creates quotaTree's ElasticQuotas, a Queue for each
// with the annotations queueAnnotations gives it, and propNodes.
func (w *propWorld) createQuotasAndNodes(queueAnnotations func(quota string) map[string]string) {
	ctx := context.Background()
	for _, q := range quotaTree {
		w.must(w.api.Create(ctx, propQuota(q.name)))
		w.must(w.api.Create(ctx, &schedulingv1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{
			Namespace: schedulingv1alpha1.QueueNamespace, Name: q.name, Annotations: queueAnnotations(q.name)}}))
	}
	for _, n := range propNodes {
		w.must(w.api.Create(ctx, wrappers.Node(n.name, n.cpu, "64Gi")))
	}
}

func newPropWorld(t testing.TB, seed int64) *propWorld {
	w := emptyPropWorld(t, seed)
	w.createQuotasAndNodes(func(string) map[string]string { return nil })
	for range 14 {
		w.newUnit()
	}
	w.start()
	return w
}

func cpu(n int64) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(n, resource.DecimalSI)}
}

func (w *propWorld) must(err error) {
	w.t.Helper()
	if err != nil {
		w.t.Fatal(err)
	}
}

// start is koord-queue starting: a new Cache, Writer and Loop, fed every
// object before the first cycle, as Loop.Start waits for the informers.
func (w *propWorld) start() {
	w.landAll()
	ctx := context.Background()
	faulty := interceptor.NewClient(w.api, interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			return w.write(obj, func() error { return c.SubResource(sub).Patch(ctx, obj, p, opts...) })
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			return w.write(obj, func() error { return c.Patch(ctx, obj, p, opts...) })
		},
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if w.faults && w.rng.Intn(20) == 0 {
				w.seen["read failed"]++
				return errors.New("connection refused")
			}
			return c.Get(ctx, key, obj, opts...)
		},
	})
	w.cache = NewCache()
	w.writer = NewWriter(faulty, faulty, &record.FakeRecorder{}, w.cache, w.clock, WriterOptions{Workers: 2, MessageQPS: 1e9})
	w.loop = &Loop{cache: w.cache, writer: w.writer, clock: w.clock}
	w.pending = nil
	eqs := &elasticquotav1alpha1.ElasticQuotaList{}
	w.must(w.api.List(ctx, eqs))
	for i := range eqs.Items {
		w.cache.UpsertElasticQuota(&eqs.Items[i])
	}
	nodes := &corev1.NodeList{}
	w.must(w.api.List(ctx, nodes))
	for i := range nodes.Items {
		w.cache.UpsertNode(&nodes.Items[i])
	}
	w.cache.clusterCapacity.nodesListed() // as the Loop does once the informers listed
	queues := &schedulingv1alpha1.QueueList{}
	w.must(w.api.List(ctx, queues))
	for i := range queues.Items {
		w.cache.UpsertQueue(&queues.Items[i])
	}
	units := &schedulingv1alpha1.QueueUnitList{}
	w.must(w.api.List(ctx, units))
	for i := range units.Items {
		w.cache.UpsertUnit(&units.Items[i])
	}
	var pods []*corev1.Pod
	for _, name := range slices.Sorted(maps.Keys(w.pods)) {
		pods = append(pods, w.pods[name].obj(name))
	}
	w.cache.ReplacePods(pods)
	clear(w.undelivered)
}

// propPod is a pod of a unit's job, on its node.
type propPod struct {
	unit, quota string
	cpu         int64
	// leaving: being deleted, still on its node.
	leaving bool
}

// obj is the pod called name as the API server has it: made from its
// job's template, which the release named for the unit.
func (p *propPod) obj(name string) *corev1.Pod {
	pod := wrappers.MakePod(name, "ns").OfUnit(p.unit, schedulingv1alpha1.DefaultPodSetName).Controller("batch/v1", "Job", p.unit).
		Quota(p.quota).Requests("cpu", fmt.Sprint(p.cpu)).Node("n1")
	if p.leaving {
		pod.Deleting()
	}
	return pod.Obj()
}

// podGoes takes a pod being deleted off its node, as the kubelet does
// after its grace period.
func (w *propWorld) podGoes() string {
	var leaving []string
	for name, p := range w.pods {
		if p.leaving {
			leaving = append(leaving, name)
		}
	}
	if len(leaving) == 0 {
		return "pod: none leaving"
	}
	slices.Sort(leaving)
	name := leaving[w.rng.Intn(len(leaving))]
	delete(w.pods, name)
	w.cache.DeletePod("ns", name)
	return "pod " + name + " gone"
}

// write is one of koord-queue's writes reaching the API server: now and
// then it times out, after landing or before.
func (w *propWorld) write(obj client.Object, do func() error) error {
	if f := w.pause; f != nil {
		// Taken by the writer and sent: the world goes on meanwhile, and
		// the write reaches the API server when landOne lets it.
		w.pause = nil
		close(f.paused)
		<-f.release
	}
	key := obj.GetNamespace() + "/" + obj.GetName()
	if _, ok := obj.(*schedulingv1alpha1.QueueUnit); ok {
		w.writes[key]++
	}
	fault := 0
	if w.faults {
		fault = w.rng.Intn(10)
	}
	if fault != 1 {
		if err := do(); err != nil {
			w.seen["write refused"]++
			return err
		}
		w.undelivered[key] = true
	}
	if fault <= 1 && w.faults {
		w.seen[fmt.Sprintf("write timed out (landed: %v)", fault == 0)]++
		return apierrors.NewTimeoutError("the write timed out", 1)
	}
	w.seen["write"]++
	return nil
}

func (w *propWorld) newUnit() {
	w.nextUnit++
	u := &schedulingv1alpha1.QueueUnit{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("u%d", w.nextUnit),
			Labels: map[string]string{elasticquotav1alpha1.LabelQuotaName: leafQuotas[w.rng.Intn(len(leafQuotas))]}},
		Spec: schedulingv1alpha1.QueueUnitSpec{Resource: cpu(1 + w.rng.Int63n(3)), Priority: ptr.To(int32(w.rng.Intn(3)))},
	}
	if w.rng.Intn(3) == 0 {
		// Pods of one cpu, of which it may start with fewer (partial
		// admission); its request is theirs.
		count := int32(2 + w.rng.Intn(4))
		u.Spec.Resource = nil
		u.Spec.PodSets = []schedulingv1alpha1.PodSet{{Name: schedulingv1alpha1.DefaultPodSetName, Count: count, MinCount: ptr.To(int32(1 + w.rng.Intn(int(count)))),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: cpu(1)}}}}}}}
	}
	if w.rng.Intn(2) == 0 {
		u.Spec.ConsumerRef = &corev1.ObjectReference{Kind: "Job", Namespace: "ns", Name: u.Name}
	}
	w.must(w.api.Create(context.Background(), u))
	w.undelivered["ns/"+u.Name] = true
}

// step takes one step the seed picks.
func (w *propWorld) step() string {
	what := w.pick()
	w.seen[strings.Fields(what)[0]]++
	return what
}

func (w *propWorld) pick() string {
	switch r := w.rng.Intn(100); {
	case r < 20:
		w.cycle()
		return "cycle"
	case r < 45:
		return w.writeOne()
	case r < 50:
		return w.landOne()
	case r < 70:
		return w.deliverOne()
	case r < 79:
		return w.followAJob(true)
	case r < 82:
		return w.podGoes()
	case r < 97:
		return w.change()
	case r < 98:
		w.start()
		return "restart"
	default:
		w.clock.Step(time.Second)
		return "tick"
	}
}

// cycle is one pass of the loop; the writes it hands over wait in pending.
func (w *propWorld) cycle() {
	w.wakeup, _, _ = w.loop.runOnce()
	var handed []op
	for w.writer.urgent.Len() > 0 {
		o, _ := w.writer.urgent.Get()
		w.writer.urgent.Done(o)
		handed = append(handed, o)
	}
	for {
		key, kinds, _, ok := w.cache.owedWrites.takeOwed()
		if !ok {
			break
		}
		if kinds&owesQueueName != 0 {
			handed = append(handed, op{kind: opQueueName, key: key})
		}
		if kinds&owesMessage != 0 {
			handed = append(handed, op{kind: opMessage, key: key})
		}
	}
	// The Cache hands them over in map order; sorted, a seed replays.
	slices.SortFunc(handed, func(a, b op) int {
		if a.kind != b.kind {
			return int(a.kind) - int(b.kind)
		}
		return strings.Compare(a.key, b.key)
	})
	w.pending = append(w.pending, handed...)
}

// writeOne makes one pending write; a failed one stays pending. Like the
// Writer, it makes admissions, evictions and checks verdicts before the
// writes that only inform, but not always: order is not promised.
func (w *propWorld) writeOne() string {
	if len(w.pending) == 0 {
		return "write: none pending"
	}
	var urgent []int
	for i, o := range w.pending {
		if o.kind < opMessage {
			urgent = append(urgent, i)
		}
	}
	i := w.rng.Intn(len(w.pending))
	if len(urgent) > 0 && w.rng.Intn(5) > 0 {
		i = urgent[w.rng.Intn(len(urgent))]
	}
	o := w.pending[i]
	w.pending = slices.Delete(w.pending, i, i+1)
	if o.kind == opAdmit && w.faults && w.rng.Intn(4) == 0 {
		return w.takeOne(o)
	}
	return w.settleOp(o, w.doOp(o))
}

// doOp is the writer making one write.
func (w *propWorld) doOp(o op) error {
	ctx := context.Background()
	var err error
	switch o.kind {
	case opAdmit:
		err = w.writer.writeAdmission(ctx, o.key)
	case opEvict:
		err = w.writer.writeEviction(ctx, o.key)
	case opChecksPassed, opChecksFailed:
		err = w.writer.writeChecksVerdict(ctx, o.key)
	case opMessage:
		w.writer.writeMessage(ctx, o.key)
	case opQueueName:
		w.writer.writeQueueName(ctx, o.key)
	}
	return err
}

// settleOp records what a write made of o answered; a failed one is
// pending again.
func (w *propWorld) settleOp(o op, err error) string {
	w.seen[fmt.Sprintf("op %d", o.kind)]++
	if err != nil {
		w.pending = append(w.pending, o)
		w.seen[fmt.Sprintf("op %d failed", o.kind)]++
		if errors.Is(err, patch.ErrOutcomeUnknown) {
			w.seen["outcome unknown"]++
		}
	}
	return fmt.Sprintf("write %d %s: %v", o.kind, o.key, err)
}

// flight is a write the writer took and sent, and the API server has not
// answered yet.
type flight struct {
	o op
	// paused is closed when the write waits at the API server's door;
	// release lets it through; done is its answer.
	paused, release chan struct{}
	done            chan error
}

// takeOne is the writer taking o and sending its write, which stays in
// flight while the world goes on: the decision read, the write not yet
// answered. (One goroutine runs at a time: the world waits for the
// flight to reach the door, or to end without writing.)
func (w *propWorld) takeOne(o op) string {
	f := &flight{o: o, paused: make(chan struct{}), release: make(chan struct{}), done: make(chan error, 1)}
	w.pause = f
	go func() { f.done <- w.doOp(o) }()
	select {
	case <-f.paused:
		w.flights = append(w.flights, f)
		w.seen["write in flight"]++
		return fmt.Sprintf("write %d %s: taken, in flight", o.kind, o.key)
	case err := <-f.done:
		w.pause = nil
		return w.settleOp(o, err)
	}
}

// landOne lets one write in flight reach the API server, and takes its answer.
func (w *propWorld) landOne() string {
	if len(w.flights) == 0 {
		return "land: none in flight"
	}
	i := w.rng.Intn(len(w.flights))
	f := w.flights[i]
	w.flights = slices.Delete(w.flights, i, i+1)
	close(f.release)
	return "land " + w.settleOp(f.o, <-f.done)
}

// landAll lets every write in flight land, as a process that stops
// leading has had its writes answered before another leads.
func (w *propWorld) landAll() {
	for len(w.flights) > 0 {
		w.remember(w.landOne())
	}
}

// deliverOne brings one unit's latest state to the Cache, as its informer would.
func (w *propWorld) deliverOne() string {
	if len(w.undelivered) == 0 {
		return "deliver: none"
	}
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range w.undelivered {
			if !yield(k) {
				return
			}
		}
	})
	key := keys[w.rng.Intn(len(keys))]
	delete(w.undelivered, key)
	ns, name, _ := strings.Cut(key, "/")
	u := &schedulingv1alpha1.QueueUnit{}
	if err := w.api.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u); apierrors.IsNotFound(err) {
		w.cache.DeleteUnit(ns, name)
		return "deliver deletion of " + key
	} else {
		w.must(err)
	}
	w.cache.UpsertUnit(u)
	return "deliver " + key
}

func (w *propWorld) units() []schedulingv1alpha1.QueueUnit {
	list := &schedulingv1alpha1.QueueUnitList{}
	w.must(w.api.List(context.Background(), list))
	slices.SortFunc(list.Items, func(a, b schedulingv1alpha1.QueueUnit) int { return strings.Compare(a.Name, b.Name) })
	return list.Items
}

// followAJob is an extension following one unit's job: an evicted job's
// pods go; a released job runs; a running one may finish (when finish).
// A unit no extension manages may finish too (whoever wrote it says so).
func (w *propWorld) followAJob(finish bool) string {
	var candidates []schedulingv1alpha1.QueueUnit
	for _, u := range w.units() {
		if queueunit.HoldsQuota(&u) {
			candidates = append(candidates, u)
		}
	}
	if len(candidates) == 0 {
		return "follow: no job"
	}
	return w.follow(candidates[w.rng.Intn(len(candidates))], finish)
}

// followEveryJob follows the first job, by name, that has news for its unit.
func (w *propWorld) followEveryJob() string {
	for _, u := range w.units() {
		if queueunit.HoldsQuota(&u) {
			if what := w.follow(u, false); !strings.HasPrefix(what, "follow:") {
				return what
			}
		}
	}
	return "follow: nothing new"
}

func (w *propWorld) follow(u schedulingv1alpha1.QueueUnit, finish bool) string {
	js := queueunit.JobState{Suspended: true} // evicted: its pods are gone
	if queueunit.Admitted(u.EffectivePhase()) {
		js = queueunit.JobState{Pods: map[string]queueunit.PodCount{schedulingv1alpha1.DefaultPodSetName: {Running: 1}}}
		if finish && (w.rng.Intn(2) == 0 || u.Spec.ConsumerRef == nil) {
			js = queueunit.JobState{Finished: true, Succeeded: true}
		}
	}
	w.followPods(&u, js)
	if !queueunit.FollowJob(&u, js, metav1.NewTime(w.clock.Now())) {
		return "follow: nothing new for " + u.Name
	}
	w.must(w.api.Status().Update(context.Background(), &u))
	w.undelivered[u.Namespace+"/"+u.Name] = true
	return "follow " + u.Name
}

// followPods runs the pod of u's job, if an extension manages it, as js
// says: a released job runs it, asking what u was admitted with; an evicted
// or finished one has it deleted, and it stays on its node meanwhile (its
// extension counts it gone already, as the issue that asked for pods to be
// the truth found).
func (w *propWorld) followPods(u *schedulingv1alpha1.QueueUnit, js queueunit.JobState) {
	name := u.Name + "-pod"
	p, ok := w.pods[name]
	switch {
	case u.Spec.ConsumerRef == nil:
		return
	case !ok && len(js.Pods) > 0:
		var cpu int64
		for _, a := range u.Status.Admissions {
			cpu += a.Resources.Cpu().Value()
		}
		p = &propPod{unit: u.Name, quota: quotaOf(u), cpu: cpu}
		w.pods[name] = p
	case ok && !p.leaving && (js.Suspended || js.Finished):
		p.leaving = true
	default:
		return
	}
	w.cache.UpsertPod(p.obj(name))
}

// change is the world changing something between two steps.
func (w *propWorld) change() string {
	ctx := context.Background()
	units := w.units()
	if w.rng.Intn(3) == 0 || len(units) == 0 {
		w.newUnit()
		return "new unit"
	}
	if w.rng.Intn(8) == 0 {
		return w.changeRoom()
	}
	u := units[w.rng.Intn(len(units))]
	key := "ns/" + u.Name
	w.changes[key]++
	w.undelivered[key] = true
	var what string
	switch r := w.rng.Intn(4); {
	case r == 0:
		w.must(client.IgnoreNotFound(w.api.Delete(ctx, &u)))
		return "delete " + u.Name
	case r == 1:
		u.Spec.Active = ptr.To(!u.IsActive())
		what = fmt.Sprintf("active=%v", u.IsActive())
	case r == 2 && len(u.Spec.PodSets) > 0:
		// As an extension resizes a unit: its pods, and so its request;
		// also while the unit holds quota, as a resize written around
		// patch.Patch (which refuses it) would.
		ps := &u.Spec.PodSets[0]
		ps.Count = int32(2 + w.rng.Intn(4))
		ps.MinCount = ptr.To(min(*ps.MinCount, ps.Count))
		what = fmt.Sprintf("resize to %d pods%s", ps.Count, holding(&u))
	case r == 2:
		u.Spec.Resource = cpu(1 + w.rng.Int63n(3))
		what = "resize to " + u.Spec.Resource.Cpu().String() + holding(&u)
	case r == 3 && !queueunit.HoldsQuota(&u):
		u.Labels[elasticquotav1alpha1.LabelQuotaName] = leafQuotas[w.rng.Intn(len(leafQuotas))]
		what = "move to " + u.Labels[elasticquotav1alpha1.LabelQuotaName]
	default:
		return "no change"
	}
	if err := w.api.Update(ctx, &u); err != nil && !apierrors.IsConflict(err) {
		w.t.Fatal(err)
	}
	return what + " " + u.Name
}

// changeRoom changes the room decisions are made in: a quota's max (now
// and then below its usage), a leaf's min or its lending, a node's
// readiness or presence, or the root quota's max.
func (w *propWorld) changeRoom() string {
	ctx := context.Background()
	switch w.rng.Intn(7) {
	case 5:
		// A quota deleted while units hold it (Koordinator's webhook would
		// refuse it; koord-queue does not rely on one), or made again.
		name := deletable[w.rng.Intn(len(deletable))]
		eq := &elasticquotav1alpha1.ElasticQuota{}
		if err := w.api.Get(ctx, client.ObjectKey{Namespace: "quotas", Name: name}, eq); apierrors.IsNotFound(err) {
			eq = propQuota(name)
			w.must(w.api.Create(ctx, eq))
			w.cache.UpsertElasticQuota(eq)
			return "quota " + name + " made again"
		} else {
			w.must(err)
		}
		w.must(w.api.Delete(ctx, eq))
		w.cache.DeleteElasticQuota("quotas", name)
		return "quota " + name + " deleted"
	case 6:
		// A Queue deleted, say while its head preempts, or made again.
		name := leafQuotas[w.rng.Intn(len(leafQuotas))]
		q := &schedulingv1alpha1.Queue{}
		if err := w.api.Get(ctx, client.ObjectKey{Namespace: schedulingv1alpha1.QueueNamespace, Name: name}, q); apierrors.IsNotFound(err) {
			q = &schedulingv1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Namespace: schedulingv1alpha1.QueueNamespace, Name: name}}
			w.must(w.api.Create(ctx, q))
			w.cache.UpsertQueue(q)
			return "queue " + name + " made again"
		} else {
			w.must(err)
		}
		w.must(w.api.Delete(ctx, q))
		w.cache.DeleteQueue(name)
		return "queue " + name + " deleted"
	case 0:
		n := propNodes[w.rng.Intn(len(propNodes))]
		node := &corev1.Node{}
		if err := w.api.Get(ctx, client.ObjectKey{Name: n.name}, node); apierrors.IsNotFound(err) {
			node = wrappers.Node(n.name, n.cpu, "64Gi")
			w.must(w.api.Create(ctx, node))
			w.cache.UpsertNode(node)
			return "node " + n.name + " back"
		} else {
			w.must(err)
		}
		if w.rng.Intn(2) == 0 {
			w.must(w.api.Delete(ctx, node))
			w.cache.DeleteNode(n.name)
			return "node " + n.name + " lost"
		}
		ready := &node.Status.Conditions[0]
		ready.Status = map[corev1.ConditionStatus]corev1.ConditionStatus{corev1.ConditionTrue: corev1.ConditionFalse, corev1.ConditionFalse: corev1.ConditionTrue}[ready.Status]
		w.must(w.api.Update(ctx, node))
		w.cache.UpsertNode(node)
		return fmt.Sprintf("node %s Ready %s", n.name, ready.Status)
	case 1:
		root := &elasticquotav1alpha1.ElasticQuota{}
		err := w.api.Get(ctx, client.ObjectKey{Namespace: "quotas", Name: elasticquotav1alpha1.RootQuotaName}, root)
		switch {
		case err == nil && w.rng.Intn(3) == 0:
			w.must(w.api.Delete(ctx, root))
			w.cache.DeleteElasticQuota("quotas", root.Name)
			return "root quota deleted"
		case apierrors.IsNotFound(err):
			root = &elasticquotav1alpha1.ElasticQuota{ObjectMeta: metav1.ObjectMeta{Namespace: "quotas", Name: elasticquotav1alpha1.RootQuotaName,
				Labels: map[string]string{elasticquotav1alpha1.LabelQuotaIsParent: "true"}}}
			root.Spec.Max = cpu(4 + w.rng.Int63n(10))
			w.must(w.api.Create(ctx, root))
		default:
			w.must(err)
			root.Spec.Max = cpu(4 + w.rng.Int63n(10))
			w.must(w.api.Update(ctx, root))
		}
		w.cache.UpsertElasticQuota(root)
		return fmt.Sprintf("root quota max now %s", root.Spec.Max.Cpu())
	}
	q := quotaTree[w.rng.Intn(len(quotaTree))]
	eq := &elasticquotav1alpha1.ElasticQuota{}
	if err := w.api.Get(ctx, client.ObjectKey{Namespace: "quotas", Name: q.name}, eq); apierrors.IsNotFound(err) {
		return "no change: quota " + q.name + " deleted"
	} else {
		w.must(err)
	}
	var what string
	switch r := w.rng.Intn(3); {
	case r == 1 && q.parent != "":
		eq.Spec.Min = cpu(w.rng.Int63n(q.min + 2))
		what = fmt.Sprintf("min of %s now %s", q.name, eq.Spec.Min.Cpu())
	case r == 2 && q.parent != "":
		lends := eq.Labels[elasticquotav1alpha1.LabelAllowLentResource] == "false"
		eq.Labels[elasticquotav1alpha1.LabelAllowLentResource] = fmt.Sprint(lends)
		what = fmt.Sprintf("%s lends: %v", q.name, lends)
	default:
		eq.Spec.Max = cpu(max(q.min, 1+w.rng.Int63n(q.max+2)))
		what = fmt.Sprintf("max of %s now %s", q.name, eq.Spec.Max.Cpu())
	}
	w.must(w.api.Update(ctx, eq))
	w.cache.UpsertElasticQuota(eq)
	return what
}

// holding says, for a step's description, whether u holds quota.
func holding(u *schedulingv1alpha1.QueueUnit) string {
	if queueunit.HoldsQuota(u) {
		return " while it holds quota"
	}
	return ""
}

// quotaOf is the quota a unit is charged to, as Koordinator charges its pods.
func quotaOf(u *schedulingv1alpha1.QueueUnit) string {
	if n := elasticquotav1alpha1.QuotaNameFromLabels(u.Labels); n != "" {
		return n
	}
	return u.Spec.Queue
}

// remember keeps the last steps taken.
func (w *propWorld) remember(what string) {
	w.recent = append(w.recent, what)
	if len(w.recent) > 30 {
		w.recent = w.recent[1:]
	}
}

// check checks the invariants on what the API server holds.
func (w *propWorld) check(stepNo int, what string) {
	w.t.Helper()
	fail := func(format string, args ...any) {
		w.t.Helper()
		w.t.Fatalf("step %d (%s): %s\n%s", stepNo, what, fmt.Sprintf(format, args...), strings.Join(w.recent, "\n"))
	}
	room := w.room()
	direct := map[string]int64{}
	seen := map[string]bool{}
	units := w.units()
	for _, u := range units {
		key := "ns/" + u.Name
		seen[key] = true
		holds := queueunit.HoldsQuota(&u)
		if holds {
			var used int64
			for _, a := range u.Status.Admissions {
				used += a.Resources.Cpu().Value()
			}
			direct[quotaOf(&u)] += used
			if !w.undelivered[key] {
				w.chargedAsItsAdmissions(&u, used, fail)
			}
		}
		if holds && !w.holds[key] && queueunit.PartialCounts(&u) != nil {
			w.seen["admitted partially"]++
		}
		if d := u.Status.Attempts - w.attempts[key]; d > 1 || (d == 1 && (w.holds[key] || !holds) && u.Spec.ConsumerRef != nil) {
			fail("%s admitted again: attempts %d -> %d, holding quota before: %v, now: %v", key, w.attempts[key], u.Status.Attempts, w.holds[key], holds)
		}
		w.attempts[key], w.holds[key] = u.Status.Attempts, holds
		if limit := 40 + 20*w.changes[key]; w.writes[key] > limit {
			fail("%s written %d times (limit %d for %d changes): a livelock", key, w.writes[key], limit, w.changes[key])
		}
	}
	// An admission sent and not answered may land: counted as if it had.
	w.cache.mu.Lock()
	for key, r := range w.cache.units {
		if a := r.admission; a != nil && a.sent && !a.written && !w.holds[key] {
			direct[quotaOf(a.unit)] += a.charged.Cpu().Value()
		}
	}
	w.cache.mu.Unlock()
	for key := range w.attempts {
		if !seen[key] {
			delete(w.attempts, key)
			delete(w.holds, key)
		}
	}
	// Both steps' usage weighed in the room as it is now: a room that
	// shrank below what was already written is not a fault; an admission
	// written into it is.
	before, now := room.occupied(w.direct), room.occupied(direct)
	for _, q := range append(slices.Clone(room.names), elasticquotav1alpha1.RootQuotaName) {
		if limit := room.max[q]; now[q] > limit && now[q] > before[q] {
			fail("quota %s: occupies %d -> %d cpu, over its max %d (usage %d)", q, before[q], now[q], limit, room.used(direct, q))
		}
	}
	w.direct = direct
	// A unit's charge stays in its quota's tree, whatever happens to its
	// quota.
	w.cache.mu.Lock()
	for _, u := range units {
		key := "ns/" + u.Name
		r, ok := w.cache.units[key]
		if !ok || r.unit.ResourceVersion != u.ResourceVersion || !queueunit.HoldsQuota(&u) {
			continue
		}
		e := w.cache.core.Quotas()
		if c, charged := e.Charged(key); charged {
			want := elasticquotav1alpha1.RootQuotaName
			if q, ok := propQuotaNamed(c.Quota); ok && q.tree != "" {
				want = "pool"
			}
			if got := e.TreeRoot(c.Quota); got != want {
				w.cache.mu.Unlock()
				fail("%s, charged to quota %s, counts in the tree of %q, want %q", key, c.Quota, got, want)
			}
		}
	}
	w.cache.mu.Unlock()
	// What a quota's pods hold is charged to it until they are gone.
	podsIn := map[string]int64{}
	for _, p := range w.pods {
		podsIn[p.quota] += p.cpu
	}
	w.cache.mu.Lock()
	for _, q := range leafQuotas {
		if used := w.cache.core.Quotas().Used(q)[corev1.ResourceCPU]; used.Value() < podsIn[q] {
			w.cache.mu.Unlock()
			fail("quota %s: charged %s cpu while its jobs' pods hold %d on nodes", q, used.String(), podsIn[q])
		}
	}
	w.cache.mu.Unlock()
	for _, v := range w.cache.Queues() {
		if v.Pending < 0 || v.Admitted < 0 {
			fail("queue %s counts %d pending, %d admitted", v.Name, v.Pending, v.Admitted)
		}
	}
}

// chargedAsItsAdmissions checks that the core charges a unit that holds
// quota, once the Cache has seen it as the API server has it, what its
// admissions hold (cpu, summed): no more, whatever its spec says since.
func (w *propWorld) chargedAsItsAdmissions(u *schedulingv1alpha1.QueueUnit, admitted int64, fail func(string, ...any)) {
	w.t.Helper()
	w.cache.mu.Lock()
	r, ok := w.cache.units["ns/"+u.Name]
	seen := ok && r.unit.ResourceVersion == u.ResourceVersion && r.admission == nil && r.inCore
	w.cache.mu.Unlock()
	if !seen {
		return
	}
	e := w.cache.core.Quotas()
	c, charged := e.Charged("ns/" + u.Name)
	cpu := e.ResourceList(c.Request)[corev1.ResourceCPU]
	if !charged || cpu.Value() != admitted {
		asks := queueunit.Request(u)
		fail("%s holds %d cpu by its admissions, is charged %s (charged: %v); its spec asks for %s",
			u.Name, admitted, cpu.String(), charged, asks.Cpu())
	}
}

// settle lets the world calm down: no faults, no changes; extensions still
// let evicted jobs' pods go and released jobs run. It reports whether
// nothing was left to do within limit steps.
func (w *propWorld) settle(limit int) bool {
	w.faults = false
	w.landAll()
	for i := range limit {
		var what string
		switch {
		case len(w.pending) > 0 && (len(w.undelivered) == 0 || w.rng.Intn(2) == 0):
			what = w.writeOne()
		case len(w.undelivered) > 0:
			what = w.deliverOne()
		default:
			if f := w.followEveryJob(); !strings.HasPrefix(f, "follow:") {
				what = f
				break
			}
			if p := w.podGoes(); !strings.HasPrefix(p, "pod:") {
				what = p
				break
			}
			w.cycle()
			if len(w.pending) == 0 && len(w.undelivered) == 0 {
				// The loop sleeps until its next wakeup (a backoff, a
				// deadline, a preemption delay ending): nothing is settled
				// while a timer holds state a fresh start would not have.
				if !w.wakeup.IsZero() {
					w.clock.SetTime(w.wakeup)
					continue
				}
				return true
			}
			what = "cycle"
		}
		w.check(i, "settling: "+what)
		w.remember("settling: " + what)
	}
	return false
}

// fixedPoint checks that a fresh koord-queue, fed the settled state, would
// change nothing: it charges every unit what the settled one did (partial
// admissions included), and every unit owed quota has it.
func (w *propWorld) fixedPoint() {
	w.t.Helper()
	var live []string
	for _, q := range quotaTree {
		used := w.cache.core.Quotas().Used(q.name)
		live = append(live, fmt.Sprintf("%s used %s (API, its own units: %d)", q.name, used.Cpu(), w.direct[q.name]))
	}
	w.chargedAsAdmitted("settled")
	w.start()
	w.chargedAsAdmitted("restarted")
	res := w.cache.cycle(w.clock.Now(), -1)
	if len(res.Admissions) > 0 || len(res.Preemptions) > 0 {
		var lines []string
		for _, u := range w.units() {
			lines = append(lines, fmt.Sprintf("%s %s q=%s holds=%v %s", u.Name, u.Status.Phase, quotaOf(&u), queueunit.HoldsQuota(&u), u.Status.Message))
		}
		w.t.Fatalf("settled, yet a fresh koord-queue admits %v and preempts %v; the settled one counted %v:\n%s", res.Admissions, res.Preemptions, live, strings.Join(lines, "\n"))
	}
}

// chargedAsAdmitted checks that the core charges every unit holding quota
// what its admissions hold (partial admissions included), and nothing for
// the others.
func (w *propWorld) chargedAsAdmitted(when string) {
	w.t.Helper()
	e := w.cache.core.Quotas()
	for _, u := range w.units() {
		var admitted resource.Quantity
		for _, a := range u.Status.Admissions {
			admitted.Add(a.Resources[corev1.ResourceCPU])
		}
		c, ok := e.Charged("ns/" + u.Name)
		charged := e.ResourceList(c.Request)[corev1.ResourceCPU]
		if ok != queueunit.HoldsQuota(&u) || charged.Cmp(admitted) != 0 {
			w.t.Fatalf("%s: %s is charged %s cpu (holds: %v), its admissions hold %s (holds: %v): %+v",
				when, u.Name, charged.String(), ok, admitted.String(), queueunit.HoldsQuota(&u), u.Status.Admissions)
		}
	}
}

func runWorld(t testing.TB, seed int64, steps int) {
	w := newPropWorld(t, seed)
	w.faults = true
	for i := range steps {
		what := w.step()
		w.check(i, what)
		w.remember(what)
	}
	// Settling takes about one write and one delivery per unit and change,
	// whatever the number of chaotic steps.
	limit := 2000 + 20*steps
	if !w.settle(limit) {
		t.Fatalf("seed %d: not settled after %d steps: %d writes pending, %d units undelivered; the last steps:\n%s", seed, limit, len(w.pending), len(w.undelivered), strings.Join(w.recent, "\n"))
	}
	w.fixedPoint()
	t.Logf("seed %d: %v", seed, w.seen)
}

// TestAdmissionWithTheWriter runs the property over many seeds.
func TestAdmissionWithTheWriter(t *testing.T) {
	// 12 seeds keep the package under a minute with -race; the fuzz target
	// runs more.
	seeds := 12
	if testing.Short() {
		seeds = 6
	}
	for seed := range int64(seeds) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runWorld(t, seed, 300) })
	}
}

// FuzzAdmissionWithTheWriter runs the property over seeds the fuzzer picks:
// go test -run XXX -fuzz FuzzAdmissionWithTheWriter -fuzztime 10m ./pkg/admission/
func FuzzAdmissionWithTheWriter(f *testing.F) {
	f.Add(int64(1), uint16(300))
	f.Fuzz(func(t *testing.T, seed int64, steps uint16) {
		runWorld(t, seed, int(steps%600))
	})
}
