package framework

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
)

func slotPod(name, set string, gated bool) corev1.Pod {
	p := corev1.Pod{}
	p.Name, p.UID = name, types.UID(name)
	p.Labels = map[string]string{"set": set}
	if gated {
		p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: schedulingv1alpha1.SchedulingGateAdmission}}
	}
	return p
}

func podSetLabel(p *corev1.Pod) string { return p.Labels["set"] }

// TestSlotExpectations: step by step, what is expected of a job's pods as
// the cache shows them.
func TestSlotExpectations(t *testing.T) {
	const job = types.UID("job")
	type step struct {
		what string
		// listed: the job's pods the cache shows at this step.
		listed []corev1.Pod
		// act, holding the job: let pods in, open gates.
		act func(s *JobSlots)
		// advance: the clock moves on first.
		advance time.Duration
		// want: Pending by pod set after the step; recheck: Recheck.
		want    map[string]int32
		recheck time.Duration
	}
	running := slotPod("running", "w", false)
	gatedA := slotPod("a", "w", true)
	openedA := slotPod("a", "w", false)
	steps := []step{{
		what:   "two pods let in; the cache shows a pod that was there before",
		listed: []corev1.Pod{running, gatedA},
		act:    func(s *JobSlots) { s.Created("w"); s.Created("w") },
		want:   map[string]int32{"w": 2}, recheck: 10 * time.Second,
	}, {
		what:    "a gated pod shows: it is not one let in",
		listed:  []corev1.Pod{running, gatedA, slotPod("g", "w", true)},
		advance: time.Second,
		want:    map[string]int32{"w": 2}, recheck: 9 * time.Second,
	}, {
		what:   "a new pod of another pod set shows: not one of these",
		listed: []corev1.Pod{running, gatedA, slotPod("g", "w", true), slotPod("ps", "ps", false)},
		want:   map[string]int32{"w": 2}, recheck: 9 * time.Second,
	}, {
		what:   "one let in shows",
		listed: []corev1.Pod{running, gatedA, slotPod("g", "w", true), slotPod("ps", "ps", false), slotPod("x", "w", false)},
		act:    func(s *JobSlots) { s.Opened(&gatedA, "w") },
		want:   map[string]int32{"w": 2}, recheck: 9 * time.Second,
	}, {
		what:   "the opened pod still shows gated; the other let in shows, already finished",
		listed: []corev1.Pod{running, gatedA, slotPod("g", "w", true), slotPod("x", "w", false), slotPod("y", "w", false)},
		want:   map[string]int32{"w": 1}, recheck: 10 * time.Second,
	}, {
		what:   "the opened pod shows open",
		listed: []corev1.Pod{running, openedA, slotPod("g", "w", true)},
		want:   map[string]int32{"w": 0},
	}, {
		what:   "a pod opened and gone before the cache showed it open",
		listed: []corev1.Pod{running, slotPod("g", "w", true)},
		act:    func(s *JobSlots) { g := slotPod("g", "w", true); s.Opened(&g, "w") },
		want:   map[string]int32{"w": 1}, recheck: 10 * time.Second,
	}, {
		what:   "gone",
		listed: []corev1.Pod{running},
		want:   map[string]int32{"w": 0},
	}, {
		what:   "one let in, then its gate stays shut",
		listed: []corev1.Pod{running},
		act: func(s *JobSlots) {
			s.Created("w")
			g := slotPod("h", "w", true)
			s.Opened(&g, "w")
			s.NotOpened(&g)
		},
		want: map[string]int32{"w": 1}, recheck: 10 * time.Second,
	}, {
		what:    "never seen: forgotten after slotExpectationTTL",
		listed:  []corev1.Pod{running},
		advance: slotExpectationTTL,
		want:    map[string]int32{"w": 0},
	}}
	now := clocktesting.NewFakeClock(time.Unix(1e9, 0))
	e := NewSlotExpectations(now)
	for _, st := range steps {
		now.Step(st.advance)
		s := e.Lock(job)
		s.Observe(st.listed, podSetLabel)
		if st.act != nil {
			st.act(s)
		}
		got := map[string]int32{}
		for set := range st.want {
			got[set] = s.Pending(set)
		}
		if diff := cmp.Diff(st.want, got); diff != "" {
			t.Errorf("%s: pending (-want +got):\n%s", st.what, diff)
		}
		if r := s.Recheck(); r != st.recheck {
			t.Errorf("%s: recheck after %s, want %s", st.what, r, st.recheck)
		}
		s.Unlock()
	}
	if len(e.jobs) != 0 {
		t.Errorf("a job nothing is expected of is remembered: %v", e.jobs)
	}
}

// TestSlotExpectationsForgetJobsNoDecisionLooksAt: a job whose pods never
// come, and that no decision looks at again, is forgotten once its
// expectations expire, when a decision on another job sweeps.
func TestSlotExpectationsForgetJobsNoDecisionLooksAt(t *testing.T) {
	now := clocktesting.NewFakeClock(time.Unix(1e9, 0))
	e := NewSlotExpectations(now)
	s := e.Lock("quiet")
	s.Observe(nil, podSetLabel)
	s.Created("w")
	s.Unlock()
	now.Step(slotExpectationTTL)
	s = e.Lock("busy")
	s.Observe(nil, podSetLabel)
	s.Created("w")
	s.Unlock()
	if _, ok := e.jobs["quiet"]; ok {
		t.Error("the quiet job's expired expectations are remembered")
	}
	if _, ok := e.jobs["busy"]; !ok {
		t.Error("the busy job's expectations are forgotten")
	}
}

// TestSlotExpectationsKeepThePodSetToItsAdmission: property. Pods of a
// pod set admitted with n pods are asked for in bursts, and their gates
// opened, by decisions that count the pods from a cache showing the
// job's pods some steps late, and the pods expected; pods finish and go.
// Whatever the order, the pods taking a slot never outnumber n, as long
// as the cache shows each pod within slotExpectationTTL.
func TestSlotExpectationsKeepThePodSetToItsAdmission(t *testing.T) {
	for seed := range uint64(300) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 1))
			const admitted = 3
			now := clocktesting.NewFakeClock(time.Unix(1e9, 0))
			e := NewSlotExpectations(now)
			var truth []corev1.Pod     // the API server's pods, by time of change
			var history [][]corev1.Pod // what the API server held after each change
			change := func() { history = append(history, append([]corev1.Pod(nil), truth...)) }
			lag := rng.IntN(4)
			cache := func() []corev1.Pod { // some changes behind
				if len(history) <= lag {
					return nil
				}
				return history[len(history)-1-lag]
			}
			taken := func(pods []corev1.Pod) int32 {
				n := int32(0)
				for i := range pods {
					if takesSlot(&pods[i]) {
						n++
					}
				}
				return n
			}
			next := 0
			for step := range 60 {
				switch rng.IntN(4) {
				case 0, 1: // the webhook decides on a new pod
					s := e.Lock("job")
					listed := cache()
					s.Observe(listed, podSetLabel)
					let := taken(listed)+s.Pending("w") < admitted
					if let {
						s.Created("w")
					}
					s.Unlock()
					next++
					truth = append(truth, slotPod(fmt.Sprint("p", next), "w", !let))
					change()
				case 2: // the reconciler opens gates
					s := e.Lock("job")
					listed := cache()
					s.Observe(listed, podSetLabel)
					n := taken(listed) + s.Pending("w")
					for i := range listed {
						p := &listed[i]
						if !hasAdmissionGate(p) || s.IsOpened(p) || n >= admitted {
							continue
						}
						// The gate is opened on the API server's pod, if it
						// is still there and still gated.
						for j := range truth {
							if truth[j].UID == p.UID && hasAdmissionGate(&truth[j]) {
								s.Opened(p, "w")
								truth[j].Spec.SchedulingGates = nil
								n++
								change()
							}
						}
					}
					s.Unlock()
				case 3: // a pod finishes and goes
					for j := range truth {
						if takesSlot(&truth[j]) {
							truth = append(truth[:j], truth[j+1:]...)
							change()
							break
						}
					}
				}
				if n := taken(truth); n > admitted {
					t.Fatalf("step %d (cache %d changes behind): %d pods take a slot, admitted %d", step, lag, n, admitted)
				}
				now.Step(10 * time.Millisecond)
			}
		})
	}
}

// TestSlotExpectationsTurnsAreEachJobs: decisions on one job take turns,
// so that concurrent decisions on a pod set admitted with n pods let
// exactly n through, and a decision holding one job's turn keeps no other
// job's decision waiting (a shared lock would hang this test).
func TestSlotExpectationsTurnsAreEachJobs(t *testing.T) {
	e := NewSlotExpectations(clocktesting.NewFakeClock(time.Unix(1e9, 0)))
	const admitted = 5
	var wg sync.WaitGroup
	var let atomic.Int32
	for range 8 {
		wg.Go(func() {
			for range 50 {
				s := e.Lock("job")
				s.Observe(nil, podSetLabel)
				if s.Pending("w") < admitted {
					s.Created("w")
					let.Add(1)
				}
				s.Unlock()
			}
		})
	}
	wg.Wait()
	if got := let.Load(); got != admitted {
		t.Errorf("%d pods let through concurrently, admitted %d", got, admitted)
	}

	held := e.Lock("held")
	for i := range 500 {
		s := e.Lock(types.UID(fmt.Sprint("other-", i)))
		s.Unlock()
	}
	held.Unlock()
}
