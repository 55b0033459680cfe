package admission

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
)

// Each policy with the same queue: max 4 CPU, 3 CPU held by "holder", a
// high-priority 4-CPU head that does not fit and a low 1-CPU unit that does.
func TestPolicies(t *testing.T) {
	startKoordQueue(t, fastOptions())
	cases := map[string]struct {
		policy        schedulingv1alpha1.QueuePolicy
		threshold     string
		wantSmallRuns bool
		wantMessage   string
	}{
		"Priority skips a head that does not fit": {
			policy: schedulingv1alpha1.QueuePolicyPriority, wantSmallRuns: true,
		},
		"Block keeps everything behind a head that does not fit": {
			policy: schedulingv1alpha1.QueuePolicyBlock, wantSmallRuns: false,
		},
		"Intelligent: a high head blocks the high band and the low band": {
			policy: schedulingv1alpha1.QueuePolicyIntelligent, threshold: "5", wantSmallRuns: false,
		},
		"Intelligent: low units are served round-robin when no high unit waits": {
			policy: schedulingv1alpha1.QueuePolicyIntelligent, threshold: "100", wantSmallRuns: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ns := namespace(t)
			quota := ns
			eq := wrappers.MakeElasticQuota(quota, ns).Max(corev1.ResourceCPU, "4").Policy(tc.policy)
			if tc.threshold != "" {
				eq.Annotation(schedulingv1alpha1.AnnotationPriorityThreshold, tc.threshold)
			}
			create(t, eq.Obj())
			create(t, wrappers.MakeQueueUnit("holder", ns).Quota(quota).Priority(1).Request(corev1.ResourceCPU, "3").Obj())
			waitPhase(t, ns, "holder", schedulingv1alpha1.Dequeued)

			create(t, wrappers.MakeQueueUnit("big", ns).Quota(quota).Priority(10).Request(corev1.ResourceCPU, "4").Obj())
			waitMessage(t, ns, "big", "cpu")
			create(t, wrappers.MakeQueueUnit("small", ns).Quota(quota).Priority(1).Request(corev1.ResourceCPU, "1").Obj())
			if tc.wantSmallRuns {
				waitPhase(t, ns, "small", schedulingv1alpha1.Dequeued)
				staysEnqueued(t, ns, "big")
			} else {
				waitMessage(t, ns, "small")
				// "small" was considered after "big": had the policy let it
				// pass, it would be admitted by the time its message is written.
				staysEnqueued(t, ns, "small")
				finish(t, ns, "holder")
				waitPhase(t, ns, "big", schedulingv1alpha1.Dequeued)
				staysEnqueued(t, ns, "small")
			}
		})
	}
}

// TestHierarchicalMax: a child may not exceed its parent's max, whatever its own says.
func TestHierarchicalMax(t *testing.T) {
	startKoordQueue(t, fastOptions())
	ns := namespace(t)
	create(t,
		wrappers.MakeElasticQuota(ns+"-parent", ns).Max(corev1.ResourceCPU, "4").IsParent().Obj(),
		wrappers.MakeElasticQuota(ns+"-a", ns).Max(corev1.ResourceCPU, "4").Parent(ns+"-parent").Obj(),
		wrappers.MakeElasticQuota(ns+"-b", ns).Max(corev1.ResourceCPU, "4").Parent(ns+"-parent").Obj(),
	)
	create(t, wrappers.MakeQueueUnit("a1", ns).Quota(ns+"-a").Request(corev1.ResourceCPU, "3").Obj())
	waitPhase(t, ns, "a1", schedulingv1alpha1.Dequeued)
	create(t, wrappers.MakeQueueUnit("b1", ns).Quota(ns+"-b").Request(corev1.ResourceCPU, "3").Obj())
	waitMessage(t, ns, "b1", ns+"-parent", "cpu")
	staysEnqueued(t, ns, "b1")
	finish(t, ns, "a1")
	waitPhase(t, ns, "b1", schedulingv1alpha1.Dequeued)
}
