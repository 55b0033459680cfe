package extensions

import (
	"context"
	"testing"

	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/extensionstest"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
	"github.com/koord-queue/koord-queue/pkg/extensions/spark"
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
			return u.EffectivePhase() == schedulingv1alpha1.Enqueued
		})
	})

	t.Run("a labelled TFJob submitted running is suspended", func(t *testing.T) {
		j := extensionstest.MakeTFJob("running", ns).Quota("team-a").Suspend(false).Replica(kftraining.TFJobReplicaTypeWorker, 1, "cpu", "1").Obj()
		create(t, j)
		if !ptr.Deref(j.Spec.RunPolicy.Suspend, false) {
			t.Fatalf("the TFJob was created running")
		}
	})

	t.Run("a labelled SparkApplication submitted running is suspended, keeping the fields koord-queue does not declare", func(t *testing.T) {
		// Written as JSON with fields the extension's Go types leave out:
		// the webhook's patch and the release must keep them.
		a := &unstructured.Unstructured{}
		if err := a.UnmarshalJSON([]byte(`{
			"apiVersion": "sparkoperator.k8s.io/v1beta2", "kind": "SparkApplication",
			"metadata": {"name": "running", "namespace": "` + ns + `", "labels": {"quota.scheduling.koordinator.sh/name": "team-a"}},
			"spec": {"type": "Scala", "sparkVersion": "3.5.3", "mode": "cluster", "image": "spark:3.5.3",
				"mainClass": "org.apache.spark.examples.SparkPi", "mainApplicationFile": "local:///opt/spark/examples/jars/spark-examples.jar",
				"driver": {"cores": 1, "memory": "512m", "serviceAccount": "spark"},
				"executor": {"instances": 2, "cores": 1, "memory": "512m", "labels": {"version": "3.5.3"}}}}`)); err != nil {
			t.Fatal(err)
		}
		create(t, a)
		if suspend, _, _ := unstructured.NestedBool(a.Object, "spec", "suspend"); !suspend {
			t.Fatalf("the SparkApplication was created running: %v", a.Object["spec"])
		}
		unitKey := client.ObjectKey{Namespace: ns, Name: "running-spark-qu"}
		unitWhere(t, unitKey, "Enqueued", func(u *schedulingv1alpha1.QueueUnit) bool { return u.EffectivePhase() == schedulingv1alpha1.Enqueued })
		admit(t, unitKey)
		jobWhere(t, spark.Integration(), client.ObjectKeyFromObject(a), "released", func(j framework.GenericJob) bool { return !j.IsSuspended() })
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(a), a); err != nil {
			t.Fatal(err)
		}
		for _, path := range [][]string{{"spec", "image"}, {"spec", "mainApplicationFile"}, {"spec", "driver", "serviceAccount"}, {"spec", "executor", "labels", "version"}} {
			if _, found, _ := unstructured.NestedFieldNoCopy(a.Object, path...); !found {
				t.Errorf("after the webhook and the release, %v is gone from the application: %v", path, a.Object["spec"])
			}
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
