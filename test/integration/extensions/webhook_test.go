package extensions

import (
	"testing"

	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/extensionstest"
)

// TestWebhook: no job skips the queue by being submitted running. The
// webhook runs behind the real API server, over TLS with the certificate the
// rotator made and the CA it wrote into the webhook configuration.
func TestWebhook(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)

	t.Run("a labelled Job submitted running is suspended and queued", func(t *testing.T) {
		j := extensionstest.MakeJob("running", ns).Quota("team-a").Suspend(false).Request("cpu", "1").Obj()
		create(t, j)
		if !ptr.Deref(j.Spec.Suspend, false) {
			t.Fatalf("the Job was created running")
		}
		unitWhere(t, client.ObjectKeyFromObject(j), "Enqueued", func(u *schedulingv1alpha1.QueueUnit) bool {
			return u.Status.Phase == schedulingv1alpha1.Enqueued
		})
	})

	t.Run("a labelled TFJob submitted running is suspended", func(t *testing.T) {
		j := extensionstest.MakeTFJob("running", ns).Quota("team-a").Suspend(false).Replica(kftraining.TFJobReplicaTypeWorker, 1, "cpu", "1").Obj()
		create(t, j)
		if !ptr.Deref(j.Spec.RunPolicy.Suspend, false) {
			t.Fatalf("the TFJob was created running")
		}
	})

	t.Run("a workflow with the queue's template submitted running is suspended", func(t *testing.T) {
		w := extensionstest.MakeWorkflow("running", ns).QueueTemplate().MinResources("cpu: 1").Obj()
		create(t, w)
		if !ptr.Deref(w.Spec.Suspend, false) {
			t.Fatalf("the workflow was created running")
		}
	})

	t.Run("a Job the queue does not manage is left running", func(t *testing.T) {
		j := extensionstest.MakeJob("unlabelled", ns).Suspend(false).Request("cpu", "1").Obj()
		create(t, j)
		if ptr.Deref(j.Spec.Suspend, false) {
			t.Errorf("the webhook suspended a Job without a quota label")
		}
		// A labelled Job created after it is a barrier: once it has a unit,
		// the unlabelled one has been seen too.
		barrier := extensionstest.MakeJob("barrier", ns).Quota("team-a").Request("cpu", "1").Obj()
		create(t, barrier)
		unitWhere(t, client.ObjectKeyFromObject(barrier), "created", func(*schedulingv1alpha1.QueueUnit) bool { return true })
		noUnit(t, client.ObjectKeyFromObject(j))
	})
}
