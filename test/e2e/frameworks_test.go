package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/extensionstest"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
	"github.com/koord-queue/koord-queue/pkg/extensions/integrations"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/test/seeds"
	"github.com/koord-queue/koord-queue/test/testenv"
)

func integration(t *testing.T, name string) framework.Integration {
	t.Helper()
	integs, err := integrations.Lookup([]string{name})
	if err != nil {
		t.Fatal(err)
	}
	return integs[0]
}

// waitReleased waits until the job's unit is admitted by koord-queue and the
// extension has resumed the job.
func waitReleased(t *testing.T, integ framework.Integration, namespace, name string) {
	t.Helper()
	testenv.Eventually(t, time.Minute, func(ctx context.Context) error {
		u := &schedulingv1alpha1.QueueUnit{}
		if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: integ.UnitName(name)}, u); err != nil {
			return fmt.Errorf("unit %s: %w", integ.UnitName(name), err)
		}
		if len(u.Status.Admissions) == 0 {
			return fmt.Errorf("unit %s phase %s, not admitted (%s)", u.Name, u.EffectivePhase(), u.Status.Message)
		}
		job := integ.NewJob()
		if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, job.Object()); err != nil {
			return err
		}
		if job.IsSuspended() {
			return fmt.Errorf("%s %s admitted but still suspended", integ.GVK.Kind, name)
		}
		return nil
	})
}

// TestFrameworksAreQueuedAndReleased submits one suspended job of every
// framework besides batch Job (whose pods really run, see jobs_test.go) on
// the local cluster with its CRD installed, and watches koord-queue admit its
// unit and the extension resume it. No framework controller runs in this
// namespace (kubeflow_test.go, ray_test.go and argo_test.go run the
// training-operator, the ray-operator and the workflow-controller in
// others): the resume is what koord-queue owes these jobs.
func TestFrameworksAreQueuedAndReleased(t *testing.T) {
	ns := "frameworks"
	create(t, namespaceObj(ns))
	create(t, wrappers.MakeElasticQuota("frameworks-team", ns).Max(corev1.ResourceCPU, "100").Max(corev1.ResourceMemory, "400Gi").Obj())
	cases := map[string]client.Object{
		"tfjob": extensionstest.MakeTFJob("tf", ns).Quota("frameworks-team").Suspend(true).
			Replica(kftraining.TFJobReplicaTypePS, 1, "cpu", "1").Replica(kftraining.TFJobReplicaTypeWorker, 2, "cpu", "2").Obj(),
		"pytorchjob": extensionstest.MakePyTorchJob("pytorch", ns).Quota("frameworks-team").SuspendAnnotation().
			Replica(kftraining.PyTorchJobReplicaTypeMaster, 1, "cpu", "1").Replica(kftraining.PyTorchJobReplicaTypeWorker, 2, "cpu", "1").Obj(),
		"mpijob": extensionstest.MakeMPIJob("mpi", ns).Quota("frameworks-team").Suspend(true).
			Replica(kftraining.MPIJobReplicaTypeLauncher, 1, "cpu", "1").Replica(kftraining.MPIJobReplicaTypeWorker, 2, "cpu", "1").Obj(),
		"workflow": extensionstest.MakeWorkflow("wf", ns).Quota("frameworks-team").QueueTemplate().Suspend(true).MinResources("cpu: 2").Obj(),
		"rayjob": extensionstest.MakeRayJob("ray", ns, extensionstest.MakeRayClusterSpec("cpu", "1").WorkerGroup("workers", 2, "cpu", "1").Obj()).
			Quota("frameworks-team").Suspend(true).Obj(),
		"raycluster": extensionstest.MakeRayCluster("raycluster", ns, extensionstest.MakeRayClusterSpec("cpu", "1").WorkerGroup("workers", 2, "cpu", "1").Obj()).
			Quota("frameworks-team").Suspend(true).Obj(),
		"sparkapplication": extensionstest.MakeSparkApplication("spark", ns).Quota("frameworks-team").SuspendAnnotation().
			Driver(1, "1g").Executors(2, 1, "1g").Obj(),
	}
	for name, job := range cases {
		t.Run(name, func(t *testing.T) {
			create(t, job)
			waitReleased(t, integration(t, name), ns, job.GetName())
		})
	}
}

// TestSeedArgoWorkflow applies seed 004's Argo Workflow unchanged. It names
// no quota, so it goes to koordinator-default-quota, Koordinator's fallback.
func TestSeedArgoWorkflow(t *testing.T) {
	create(t, wrappers.MakeElasticQuota(elasticquotav1alpha1.DefaultQuotaName, metav1.NamespaceDefault).Max(corev1.ResourceCPU, "10").Max(corev1.ResourceMemory, "20Gi").Obj())
	objs, err := seeds.Objects("004-argo-workflow.yaml")
	if err != nil {
		t.Fatal(err)
	}
	objs[0].SetNamespace(metav1.NamespaceDefault) // as kubectl apply does
	create(t, objs[0])
	waitReleased(t, integration(t, "workflow"), metav1.NamespaceDefault, "my-workflow")
	u := &schedulingv1alpha1.QueueUnit{}
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: metav1.NamespaceDefault, Name: "my-workflow"}, u); err != nil {
		t.Fatal(err)
	}
	if cpu := u.Spec.Resource.Cpu(); cpu.String() != "5" || u.Spec.Resource.Memory().String() != "5Gi" {
		t.Errorf("unit request %v, want cpu 5 and memory 5Gi from koord-queue/min-resources", u.Spec.Resource)
	}
}
