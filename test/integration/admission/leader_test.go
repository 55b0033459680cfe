package admission

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/cmd/queue/app"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/test/testenv"
)

// TestLeaderElection runs two replicas, as the chart can: only the elected
// one admits, so a quota that fits one unit admits one; when the leader
// stops, the other takes over and admits the next unit once quota frees.
func TestLeaderElection(t *testing.T) {
	type replica struct {
		mgr  manager.Manager
		stop func()
	}
	start := func(name string) *replica {
		r := &replica{}
		stop, err := env.StartManager(context.Background(), func(mgr manager.Manager) error {
			r.mgr = mgr
			_, err := app.Setup(context.Background(), mgr, fastOptions())
			return err
		}, func(o *manager.Options) {
			o.LeaderElection = true
			o.LeaderElectionID = "koord-queue-leader-test"
			o.LeaderElectionNamespace = schedulingv1alpha1.QueueNamespace
			o.LeaderElectionReleaseOnCancel = true
			// Short terms, so the takeover is quick; as in production, a
			// replica that cannot renew stops leading.
			o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = ptr.To(3*time.Second), ptr.To(2*time.Second), ptr.To(200*time.Millisecond)
		})
		if err != nil {
			t.Fatalf("starting replica %s: %v", name, err)
		}
		r.stop = stop
		t.Cleanup(stop)
		return r
	}
	a, b := start("a"), start("b")
	var leader, follower *replica
	select {
	case <-a.mgr.Elected():
		leader, follower = a, b
	case <-b.mgr.Elected():
		leader, follower = b, a
	case <-time.After(testenv.DefaultTimeout):
		t.Fatal("no replica was elected")
	}

	ns := namespace(t)
	create(t, wrappers.MakeElasticQuota("le-team", ns).Max(corev1.ResourceCPU, "1").Obj())
	// Both units at once: two replicas that both admitted, each from its own
	// cache, would admit one each, over the quota's max.
	create(t,
		wrappers.MakeQueueUnit("a", ns).Quota("le-team").Request(corev1.ResourceCPU, "1").Obj(),
		wrappers.MakeQueueUnit("b", ns).Quota("le-team").Request(corev1.ResourceCPU, "1").Obj())
	waitHolding(t, ns, 1)
	admitted, waiting := "a", "b"
	if u, err := getUnit(context.Background(), ns, "b"); err == nil && queueunit.HoldsQuota(u) {
		admitted, waiting = "b", "a"
	}
	// The leader has decided that the other waits; a second admitting
	// replica would have admitted it by then.
	waitMessage(t, ns, waiting, "le-team", "cpu")
	if n := countHolding(t, ns); n != 1 {
		t.Fatalf("%d cpu held, want 1: the quota's max", n)
	}
	select {
	case <-follower.mgr.Elected():
		t.Fatal("both replicas lead")
	default:
	}

	// Koord-Queue v1.8's metrics are exported by the leader alone (a second
	// replica registering them in this process would have failed to start).
	waitV18Usage(t, "le-team", 1000)

	leader.stop()
	select {
	case <-follower.mgr.Elected():
	case <-time.After(testenv.DefaultTimeout):
		t.Fatal("the follower did not take over after the leader stopped")
	}
	// The new leader exports them, from its own cache.
	waitV18Usage(t, "le-team", 1000)
	finish(t, ns, admitted)
	waitPhase(t, ns, waiting, schedulingv1alpha1.Dequeued)
}
