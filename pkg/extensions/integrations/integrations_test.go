package integrations_test

import (
	"testing"

	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/koord-queue/koord-queue/apis"
	"github.com/koord-queue/koord-queue/pkg/extensions/argo"
	"github.com/koord-queue/koord-queue/pkg/extensions/extensionstest"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework/frameworktest"
	"github.com/koord-queue/koord-queue/pkg/extensions/integrations"
	"github.com/koord-queue/koord-queue/pkg/extensions/job"
	"github.com/koord-queue/koord-queue/pkg/extensions/kubeflow"
	"github.com/koord-queue/koord-queue/pkg/extensions/ray"
	"github.com/koord-queue/koord-queue/pkg/extensions/spark"
)

// TestNegativeAmountsAreRefused: a job of any framework asking a negative
// amount anywhere is refused, whatever its total: a PyTorchJob whose master
// asks -8 cpu and whose two workers ask 4 each asks 0 in all, and would
// run 8 cpu in a full quota. The API server does not validate the pod
// templates inside a custom resource, so the extension must.
func TestNegativeAmountsAreRefused(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := apis.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := integrations.AddToScheme(scheme, integrations.All()); err != nil {
		t.Fatal(err)
	}
	const negativeCPU = `resources.requests[cpu] is -8: a resource amount must not be negative`
	cases := map[string]struct {
		integ framework.Integration
		job   client.Object
		want  string
	}{
		"a Job": {
			integ: job.Integration(),
			job:   extensionstest.MakeJob("j", "ns").Quota("team-a").Suspend(true).Request("cpu", "-8").Obj(),
			want:  `pod set "main": containers[0] (main): ` + negativeCPU,
		},
		"a PyTorchJob whose total is zero": {
			integ: kubeflow.PyTorchJobIntegration(),
			job: extensionstest.MakePyTorchJob("py", "ns").Quota("team-a").Suspend(true).
				Replica(kftraining.PyTorchJobReplicaTypeMaster, 1, "cpu", "-8").
				Replica(kftraining.PyTorchJobReplicaTypeWorker, 2, "cpu", "4").Obj(),
			want: `pod set "master": containers[0] (main): ` + negativeCPU,
		},
		"a TFJob": {
			integ: kubeflow.TFJobIntegration(),
			job: extensionstest.MakeTFJob("tf", "ns").Quota("team-a").Suspend(true).
				Replica(kftraining.TFJobReplicaTypeWorker, 2, "cpu", "4", "memory", "-1Gi").Obj(),
			want: `pod set "worker": containers[0] (main): resources.requests[memory] is -1Gi`,
		},
		"an MPIJob": {
			integ: kubeflow.MPIJobIntegration(),
			job: extensionstest.MakeMPIJob("mpi", "ns").Quota("team-a").Suspend(true).
				Replica(kftraining.MPIJobReplicaTypeLauncher, 1, "cpu", "1").
				Replica(kftraining.MPIJobReplicaTypeWorker, 2, "cpu", "-8").Obj(),
			want: `pod set "worker": containers[0] (main): ` + negativeCPU,
		},
		"an Argo Workflow's min-resources": {
			integ: argo.Integration(),
			job:   extensionstest.MakeWorkflow("wf", "ns").QueueTemplate().Quota("team-a").Suspend(true).MinResources("cpu: -8").Obj(),
			want:  `annotation koord-queue/min-resources: cpu is negative`,
		},
		"a RayJob's worker group": {
			integ: ray.RayJobIntegration(),
			job: extensionstest.MakeRayJob("rj", "ns", extensionstest.MakeRayClusterSpec("cpu", "1").
				WorkerGroup("small", 2, "cpu", "-8").Obj()).Quota("team-a").Obj(),
			want: `pod set "small": containers[0] (main): ` + negativeCPU,
		},
		"a RayCluster's head": {
			integ: ray.RayClusterIntegration(),
			job: extensionstest.MakeRayCluster("rc", "ns", extensionstest.MakeRayClusterSpec("cpu", "-8").
				WorkerGroup("small", 2, "cpu", "4").Obj()).Quota("team-a").Suspend(true).Obj(),
			want: `pod set "head": containers[0] (main): ` + negativeCPU,
		},
		"a SparkApplication": {
			integ: spark.Integration(),
			job:   extensionstest.MakeSparkApplication("sp", "ns").Quota("team-a").Driver(-8, "1g").Obj(),
			want:  `cores -8`,
		},
	}
	covered := map[string]bool{}
	for name, tc := range cases {
		covered[tc.integ.Name] = true
		t.Run(name, func(t *testing.T) {
			frameworktest.CheckHeldInvalid(t, scheme, tc.integ, tc.job, tc.want)
		})
	}
	for _, i := range integrations.All() {
		if !covered[i.Name] {
			t.Errorf("no case for the %s extension", i.Name)
		}
	}
}
