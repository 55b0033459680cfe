package podledger_test

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/podledger"
)

func cpu(v string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(v)}
}

// TestScheduledCountsAsTheExtensionsDo: a pod counts as running for its
// unit once it has a node, until it fails or is being deleted; one that
// succeeded still counts.
func TestScheduledCountsAsTheExtensionsDo(t *testing.T) {
	now := metav1.Now()
	for name, tc := range map[string]struct {
		node     string
		phase    corev1.PodPhase
		deleting bool
		want     bool
	}{
		"waiting for a node":      {phase: corev1.PodPending},
		"bound, not started":      {node: "n", phase: corev1.PodPending, want: true},
		"running":                 {node: "n", phase: corev1.PodRunning, want: true},
		"succeeded":               {node: "n", phase: corev1.PodSucceeded, want: true},
		"failed":                  {node: "n", phase: corev1.PodFailed},
		"running, being deleted":  {node: "n", phase: corev1.PodRunning, deleting: true},
		"finished without a node": {phase: corev1.PodSucceeded},
	} {
		t.Run(name, func(t *testing.T) {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: corev1.PodSpec{NodeName: tc.node}, Status: corev1.PodStatus{Phase: tc.phase}}
			if tc.deleting {
				p.DeletionTimestamp = &now
			}
			if got := podledger.Scheduled(p); got != tc.want {
				t.Errorf("Scheduled = %v, want %v", got, tc.want)
			}
			if got := podledger.FromPod(p).Scheduled; got != tc.want {
				t.Errorf("FromPod(p).Scheduled = %v, want %v", got, tc.want)
			}
		})
	}
}

// str renders a ResourceList for comparisons.
func str(l corev1.ResourceList) map[string]string {
	out := map[string]string{}
	for n, q := range l {
		out[string(n)] = q.String()
	}
	return out
}

type tallyView struct {
	Pods, Bound    int
	Requests       map[string]string
	BoundRequests  map[string]string
	PodSets        map[string]int32
	BoundPerSets   map[string]int32
	LargestPerSets map[string]map[string]string
}

func view(t podledger.Tally) tallyView {
	v := tallyView{Pods: t.Pods, Bound: t.Bound, Requests: str(t.Requests), BoundRequests: str(t.BoundRequests),
		PodSets: map[string]int32{}, BoundPerSets: map[string]int32{}, LargestPerSets: map[string]map[string]string{}}
	for name, ps := range t.PodSets {
		v.PodSets[name] = ps.Pods
		v.BoundPerSets[name] = ps.Bound
		v.LargestPerSets[name] = str(ps.Largest)
	}
	return v
}

func TestFromPodGroupsAPodByWhatItBelongsTo(t *testing.T) {
	controller := []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "train", Controller: ptr.To(true)}}
	cases := map[string]struct {
		annotations, labels map[string]string
		owners              []metav1.OwnerReference
		want                podledger.Group
		wantPodSet          string
		wantController      string
	}{
		"the unit the release named": {
			annotations:    map[string]string{schedulingv1alpha1.AnnotationRelatedQueueUnit: "ns/train", schedulingv1alpha1.AnnotationRelatedPodSet: "main"},
			owners:         controller,
			want:           podledger.Group{Namespace: "ns", Unit: "train"},
			wantPodSet:     "main",
			wantController: "Job.batch/train",
		},
		"a unit of another namespace is no claim: its controller": {
			annotations:    map[string]string{schedulingv1alpha1.AnnotationRelatedQueueUnit: "other/train"},
			labels:         map[string]string{"quota.scheduling.koordinator.sh/name": "team"},
			owners:         controller,
			want:           podledger.Group{Namespace: "ns", OwnerKind: "Job.batch", OwnerName: "train"},
			wantController: "Job.batch/train",
		},
		"an owner that is not its controller is not its group": {
			owners: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "driver"}},
			want:   podledger.Group{Namespace: "ns"},
		},
		"a core-group controller": {
			owners:         []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "driver", Controller: ptr.To(true)}},
			want:           podledger.Group{Namespace: "ns", OwnerKind: "Pod", OwnerName: "driver"},
			wantController: "Pod/driver",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", Annotations: tc.annotations, Labels: tc.labels, OwnerReferences: tc.owners}}
			got := podledger.FromPod(p)
			if diff := cmp.Diff(tc.want, got.Group); diff != "" {
				t.Errorf("group (-want +got):\n%s", diff)
			}
			if got.PodSet != tc.wantPodSet {
				t.Errorf("pod set %q, want %q", got.PodSet, tc.wantPodSet)
			}
			if got.Controller != tc.wantController {
				t.Errorf("controller %q, want %q", got.Controller, tc.wantController)
			}
		})
	}
}

func TestTallyFollowsThePods(t *testing.T) {
	g := podledger.Group{Namespace: "ns", Unit: "train"}
	pod := func(name, node string, req corev1.ResourceList) podledger.Pod {
		return podledger.Pod{Namespace: "ns", Name: name, Group: g, PodSet: "worker", Node: node, Requests: req}
	}
	l := podledger.New()
	l.Upsert(pod("a", "n1", cpu("1")))
	l.Upsert(pod("b", "", cpu("1")))
	if diff := cmp.Diff([]podledger.Group{g}, l.Drain()); diff != "" {
		t.Errorf("changed groups (-want +got):\n%s", diff)
	}
	want := tallyView{Pods: 2, Bound: 1, Requests: map[string]string{"cpu": "2"}, BoundRequests: map[string]string{"cpu": "1"},
		PodSets: map[string]int32{"worker": 2}, BoundPerSets: map[string]int32{"worker": 1}, LargestPerSets: map[string]map[string]string{"worker": {"cpu": "1"}}}
	if diff := cmp.Diff(want, view(l.Tally(g))); diff != "" {
		t.Errorf("two pods, one bound (-want +got):\n%s", diff)
	}

	// A pod's template grown by hand: the largest pod of its set says so.
	l.Upsert(pod("b", "n2", cpu("7")))
	want = tallyView{Pods: 2, Bound: 2, Requests: map[string]string{"cpu": "8"}, BoundRequests: map[string]string{"cpu": "8"},
		PodSets: map[string]int32{"worker": 2}, BoundPerSets: map[string]int32{"worker": 2}, LargestPerSets: map[string]map[string]string{"worker": {"cpu": "7"}}}
	if diff := cmp.Diff(want, view(l.Tally(g))); diff != "" {
		t.Errorf("one pod grown (-want +got):\n%s", diff)
	}

	// Finished, gated or gone, a pod holds nothing; being deleted, it does.
	done := pod("a", "n1", cpu("1"))
	done.Done = true
	l.Upsert(done)
	gated := pod("c", "", cpu("1"))
	gated.Gated = true
	l.Upsert(gated)
	want = tallyView{Pods: 1, Bound: 1, Requests: map[string]string{"cpu": "7"}, BoundRequests: map[string]string{"cpu": "7"},
		PodSets: map[string]int32{"worker": 1}, BoundPerSets: map[string]int32{"worker": 1}, LargestPerSets: map[string]map[string]string{"worker": {"cpu": "7"}}}
	if diff := cmp.Diff(want, view(l.Tally(g))); diff != "" {
		t.Errorf("one done, one gated (-want +got):\n%s", diff)
	}
	l.Drain()
	for _, name := range []string{"a", "b", "c"} {
		l.Delete("ns", name)
	}
	if diff := cmp.Diff([]podledger.Group{g}, l.Drain()); diff != "" {
		t.Errorf("changed groups after the deletions (-want +got):\n%s", diff)
	}
	if tally := l.Tally(g); !tally.IsZero() {
		t.Errorf("tally after every pod is gone: %+v", view(tally))
	}
	if l.Len() != 0 {
		t.Errorf("%d pods kept after all are gone", l.Len())
	}
}

// TestTallyMatchesThePodsAfterAnyChanges: after any sequence of upserts and
// deletes, each group's tally and what it holds on each node
// (HeldOnNodes, EveryHeldOnNodes), the pods of each pod set that count as
// running (ScheduledPods), and each node's sum (HeldAmountsByNode,
// and as a reader that follows the changed nodes keeps it), is what its
// pods, summed afresh, hold.
func TestTallyMatchesThePodsAfterAnyChanges(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 0))
		l := podledger.New()
		model := map[string]podledger.Pod{}
		follower := nodeFollower{l: l}
		groups := []podledger.Group{{Namespace: "ns", Unit: "u1"}, {Namespace: "ns", Unit: "u2"}, {Namespace: "ns", OwnerKind: "Job.batch", OwnerName: "j"}}
		controllers := []string{"Job.batch/j", "ReplicaSet.apps/rs", ""}
		for step := range 500 {
			name := fmt.Sprintf("p%d", rng.IntN(30))
			if rng.IntN(5) == 0 {
				l.Delete("ns", name)
				delete(model, name)
			} else {
				p := podledger.Pod{Namespace: "ns", Name: name, Group: groups[rng.IntN(len(groups))], PodSet: []string{"a", "b"}[rng.IntN(2)],
					Gated: rng.IntN(6) == 0, Done: rng.IntN(6) == 0, Scheduled: rng.IntN(2) == 0, Controller: controllers[rng.IntN(len(controllers))],
					Requests: corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(int64(rng.IntN(4000)), resource.DecimalSI)}}
				if rng.IntN(2) == 0 {
					p.Node = []string{"n1", "n2"}[rng.IntN(2)]
				}
				l.Upsert(p)
				model[name] = p
			}
			if rng.IntN(10) == 0 {
				l.Drain()
			}
			for _, g := range groups {
				want := tallyView{Requests: map[string]string{}, BoundRequests: map[string]string{}, PodSets: map[string]int32{}, BoundPerSets: map[string]int32{}, LargestPerSets: map[string]map[string]string{}}
				var sum, bound int64
				largest := map[string]int64{}
				for _, p := range model {
					if p.Group != g || !p.Holds() {
						continue
					}
					want.Pods++
					m := p.Requests.Cpu().MilliValue()
					sum += m
					want.BoundPerSets[p.PodSet] += 0
					if p.Node != "" {
						want.Bound++
						bound += m
						want.BoundPerSets[p.PodSet]++
					}
					want.PodSets[p.PodSet]++
					largest[p.PodSet] = max(largest[p.PodSet], m)
				}
				if want.Pods == 0 {
					want = tallyView{Requests: map[string]string{}, BoundRequests: map[string]string{}, PodSets: map[string]int32{}, BoundPerSets: map[string]int32{}, LargestPerSets: map[string]map[string]string{}}
				}
				if sum > 0 {
					want.Requests["cpu"] = resource.NewMilliQuantity(sum, resource.DecimalSI).String()
				}
				if bound > 0 {
					want.BoundRequests["cpu"] = resource.NewMilliQuantity(bound, resource.DecimalSI).String()
				}
				for ps, m := range largest {
					want.LargestPerSets[ps] = map[string]string{}
					if m > 0 {
						want.LargestPerSets[ps]["cpu"] = resource.NewMilliQuantity(m, resource.DecimalSI).String()
					}
				}
				if diff := cmp.Diff(want, view(l.Tally(g))); diff != "" {
					t.Fatalf("seed %d step %d: group %+v (-want +got):\n%s", seed, step, g, diff)
				}
				for _, ps := range []string{"a", "b"} {
					for _, ctl := range controllers {
						var want int32
						for _, p := range model {
							if p.Group == g && p.PodSet == ps && p.Controller == ctl && p.Scheduled {
								want++
							}
						}
						if got := l.ScheduledPods(g, ps, ctl); got != want {
							t.Fatalf("seed %d step %d: group %+v pod set %s controller %q: %d pods scheduled, want %d", seed, step, g, ps, ctl, got, want)
						}
					}
				}
				onNodes := map[string]int64{}
				for _, p := range model {
					if p.Group == g && p.Node != "" && p.Holds() {
						onNodes[p.Node] += p.Requests.Cpu().MilliValue()
					}
				}
				wantNodes, gotNodes := map[string]string{}, map[string]string{}
				for n, m := range onNodes {
					if m != 0 {
						wantNodes[n] = resource.NewMilliQuantity(m, resource.DecimalSI).String()
					}
				}
				held := map[string]corev1.ResourceList{}
				l.HeldOnNodes(g, held)
				for n, h := range held {
					if q := h.Cpu(); !q.IsZero() {
						gotNodes[n] = q.String()
					}
				}
				if diff := cmp.Diff(wantNodes, gotNodes); diff != "" {
					t.Fatalf("seed %d step %d: group %+v held on nodes (-want +got):\n%s", seed, step, g, diff)
				}
			}
			onNodes, byGroup := map[string]int64{}, map[string]int64{}
			for _, p := range model {
				if p.Node != "" && p.Holds() {
					onNodes[p.Node] += p.Requests.Cpu().MilliValue()
					byGroup[fmt.Sprintf("%v on %s", p.Group, p.Node)] += p.Requests.Cpu().MilliValue()
				}
			}
			wantByGroup, gotByGroup := map[string]string{}, map[string]string{}
			for k, m := range byGroup {
				if m != 0 {
					wantByGroup[k] = resource.NewMilliQuantity(m, resource.DecimalSI).String()
				}
			}
			on := l.EveryHeldOnNodes()
			for _, sum := range on.Sums {
				for j, name := range on.Names {
					if name == corev1.ResourceCPU && sum.Amounts[j] != 0 {
						gotByGroup[fmt.Sprintf("%v on %s", sum.Group, sum.Node)] = resource.NewMilliQuantity(sum.Amounts[j], resource.DecimalSI).String()
					}
				}
			}
			if diff := cmp.Diff(wantByGroup, gotByGroup); diff != "" {
				t.Fatalf("seed %d step %d: held by group on node (-want +got):\n%s", seed, step, diff)
			}
			wantNodes, gotNodes := map[string]string{}, map[string]string{}
			for n, m := range onNodes {
				if m != 0 {
					wantNodes[n] = resource.NewMilliQuantity(m, resource.DecimalSI).String()
				}
			}
			resources, byNode := l.HeldAmountsByNode()
			cpu := slices.Index(resources, corev1.ResourceCPU)
			for n, amounts := range byNode {
				var milli int64
				if cpu >= 0 && cpu < len(amounts) {
					milli = amounts[cpu]
				}
				gotNodes[n] = resource.NewMilliQuantity(milli, resource.DecimalSI).String()
			}
			if diff := cmp.Diff(wantNodes, gotNodes); diff != "" {
				t.Fatalf("seed %d step %d: held by node (-want +got):\n%s", seed, step, diff)
			}
			// A reader that follows the changed nodes, now and then (the
			// log is sometimes cut before it reads).
			if rng.IntN(30) == 0 {
				follower.follow()
				if diff := cmp.Diff(wantNodes, follower.cpu()); diff != "" {
					t.Fatalf("seed %d step %d: held by node as followed (-want +got):\n%s", seed, step, diff)
				}
			}
		}
		if follower.reread < 2 || follower.followed == 0 {
			t.Errorf("seed %d: the follower read every node %d times and followed changes %d times: both should happen, and the log be cut", seed, follower.reread, follower.followed)
		}
		if got, want := l.Len(), len(model); got != want {
			t.Fatalf("seed %d: %d pods kept, want %d", seed, got, want)
		}
	}
}

// nodeFollower keeps each node's sum as a snapshot's reader does:
// everything once, then only the nodes HeldChangedSince names.
type nodeFollower struct {
	l                *podledger.Ledger
	mark             uint64
	sums             map[string][]int64
	reread, followed int
}

func (f *nodeFollower) follow() {
	if changed, ok := f.l.HeldChangedSince(f.mark); ok && f.sums != nil {
		f.followed++
		for n := range changed {
			f.sums[n] = slices.Clone(f.l.HeldAmountsOn(n))
		}
	} else {
		f.reread++
		f.sums = map[string][]int64{}
		_, byNode := f.l.HeldAmountsByNode()
		for n, amounts := range byNode {
			f.sums[n] = slices.Clone(amounts)
		}
	}
	f.mark = f.l.HeldMark()
}

// cpu is the followed sums of cpu, as quantities, nodes with none left
// out.
func (f *nodeFollower) cpu() map[string]string {
	resources, _ := f.l.HeldAmountsByNode()
	cpu := slices.Index(resources, corev1.ResourceCPU)
	out := map[string]string{}
	for n, amounts := range f.sums {
		if cpu >= 0 && cpu < len(amounts) && amounts[cpu] != 0 {
			out[n] = resource.NewMilliQuantity(amounts[cpu], resource.DecimalSI).String()
		}
	}
	return out
}

// BenchmarkLedgerMemory: the ledger's bytes per pod, for 50,000 pods of
// jobs of 8 pods each spread over 500 nodes (the issue asks at most 300).
func BenchmarkLedgerMemory(b *testing.B) {
	const pods = 50_000
	var perPod float64
	for range b.N {
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		l := jobsLedger(pods)
		runtime.GC()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		perPod = float64(after.HeapAlloc-before.HeapAlloc) / pods
		runtime.KeepAlive(l)
	}
	b.ReportMetric(perPod, "bytes/pod")
}

// jobsLedger is a ledger of pods pods of jobs of 8 pods each, 800 pods a
// namespace, spread over 500 nodes.
func jobsLedger(pods int) *podledger.Ledger {
	l := podledger.New()
	for i := range pods {
		l.Upsert(podledger.Pod{Namespace: fmt.Sprintf("team-%d", i/800), Name: fmt.Sprintf("job-%d-worker-%d-x7k2p", i/8, i%8),
			Group: podledger.Group{Namespace: fmt.Sprintf("team-%d", i/800), Unit: fmt.Sprintf("job-%d", i/8)}, PodSet: "worker",
			Node: fmt.Sprintf("node-%d", i%500), Scheduled: true, Controller: fmt.Sprintf("Job.batch/job-%d", i/8), Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("4Gi")}})
	}
	l.Drain()
	return l
}

// BenchmarkEveryHeldOnNodes: what the forecast's copy of the pods costs under
// the admission lock, at BenchmarkLedgerMemory's 50,000 pods of 8-pod jobs
// over 500 nodes (each job's pods on 8 nodes: 50,000 group-node sums).
func BenchmarkEveryHeldOnNodes(b *testing.B) {
	const pods = 50_000
	l := jobsLedger(pods)
	b.ReportAllocs()
	for b.Loop() {
		if n := len(l.EveryHeldOnNodes().Sums); n != pods {
			b.Fatalf("%d group-node sums, want %d", n, pods)
		}
	}
}
