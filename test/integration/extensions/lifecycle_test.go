package extensions

import (
	"context"
	"fmt"
	"slices"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/google/go-cmp/cmp"
	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/argo"
	"github.com/koord-queue/koord-queue/pkg/extensions/extensionstest"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
	"github.com/koord-queue/koord-queue/pkg/extensions/job"
	"github.com/koord-queue/koord-queue/pkg/extensions/kubeflow"
	"github.com/koord-queue/koord-queue/pkg/extensions/ray"
	"github.com/koord-queue/koord-queue/pkg/extensions/spark"
	sparkv1beta2 "github.com/koord-queue/koord-queue/pkg/extensions/spark/v1beta2"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
	qt "github.com/koord-queue/koord-queue/pkg/quota/quotatest"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
)

// podSetWant is a pod set a unit should have.
type podSetWant struct {
	Name  string
	Count int32
}

// driver plays one framework: it makes a job and writes its status as the
// framework's controller would.
type driver struct {
	integ framework.Integration
	// newJob makes a suspended job labelled with quota team-a, of priority
	// class "high".
	newJob      func(namespace string) client.Object
	wantPodSets []podSetWant
	wantRequest corev1.ResourceList
	// hasTemplates is false for a workflow and a Spark application: their
	// pod sets are made up.
	hasTemplates bool
	// running, stopped and finished change the job's status.
	running, stopped func(client.Object)
	// finished is nil for a kind that never finishes (RayCluster).
	finished  func(client.Object)
	succeeded bool
	// pod makes the i-th pod of a pod set of a running job, on no node, as
	// the framework's controller makes it (its controller and labels).
	pod func(job client.Object, podSet string, i int) *corev1.Pod
}

// podOf is the i-th pod of a pod set, on no node, controlled by owner.
func podOf(job client.Object, podSet string, i int, owner client.Object, gvk schema.GroupVersionKind) *wrappers.PodWrapper {
	return wrappers.MakePod(fmt.Sprintf("%s-%s-%d", job.GetName(), podSet, i), job.GetNamespace()).ControlledBy(owner, gvk)
}

// rayPod is the i-th pod of a pod set of a Ray cluster owner, as KubeRay
// labels it.
func rayPod(job client.Object, podSet string, i int, owner client.Object) *corev1.Pod {
	w := podOf(job, podSet, i, owner, rayv1.GroupVersion.WithKind("RayCluster"))
	if podSet == ray.HeadPodSet {
		return w.Label("ray.io/node-type", "head").Label("ray.io/group", "headgroup").Obj()
	}
	return w.Label("ray.io/node-type", "worker").Label("ray.io/group", podSet).Obj()
}

// sparkPod is the i-th pod of a pod set of a Spark application, as Spark
// makes it: the driver, named as the operator names it, controlled by the
// application (the operator's pod webhook sets that), and the executors
// controlled by the driver pod.
func sparkPod(job client.Object, podSet string, i int) *corev1.Pod {
	driver := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: job.GetName() + "-driver", UID: job.GetUID() + "-driver"}}
	if podSet == spark.DriverPodSet {
		w := podOf(job, podSet, i, job, sparkv1beta2.GroupVersion.WithKind("SparkApplication"))
		p := w.Label("spark-role", "driver").Obj()
		if i == 0 {
			p.Name = driver.Name
		}
		return p
	}
	return podOf(job, podSet, i, driver, corev1.SchemeGroupVersion.WithKind("Pod")).Label("spark-role", "executor").Obj()
}

// rayJobCluster is the name of the cluster KubeRay makes for a RayJob, as
// the RayJob's driver reports it.
func rayJobCluster(job client.Object) string { return job.GetName() + "-x7k2p" }

func drivers() []driver {
	now := metav1.Now()
	rayCluster := func() *rayv1.RayClusterSpec {
		spec := extensionstest.MakeRayClusterSpec("cpu", "1").WorkerGroup("workers", 2, "cpu", "2").Obj()
		spec.HeadGroupSpec.Template.Spec.PriorityClassName = "high"
		return spec
	}
	kubeflowDriver := func(integ framework.Integration, newJob func(ns string) client.Object, types []kftraining.ReplicaType, succeeded bool) driver {
		status := func(o client.Object) *kftraining.JobStatus {
			switch j := o.(type) {
			case *kftraining.TFJob:
				return &j.Status
			case *kftraining.PyTorchJob:
				return &j.Status
			case *kftraining.MPIJob:
				return &j.Status
			}
			panic("not a Kubeflow job")
		}
		condition := func(t kftraining.JobConditionType) kftraining.JobCondition {
			return kftraining.JobCondition{Type: t, Status: corev1.ConditionTrue, LastUpdateTime: now, LastTransitionTime: now}
		}
		return driver{
			integ: integ, newJob: newJob, hasTemplates: true, succeeded: succeeded,
			pod: func(job client.Object, podSet string, i int) *corev1.Pod {
				return podOf(job, podSet, i, job, integ.GVK).Label(kftraining.ReplicaTypeLabel, podSet).Obj()
			},
			wantPodSets: []podSetWant{{"master", 1}, {"worker", 2}},
			wantRequest: qt.Res("cpu", "3"),
			running: func(o client.Object) {
				st := status(o)
				st.ReplicaStatuses = map[kftraining.ReplicaType]*kftraining.ReplicaStatus{}
				for _, rt := range types {
					st.ReplicaStatuses[rt] = &kftraining.ReplicaStatus{Active: 1}
				}
				st.Conditions = []kftraining.JobCondition{condition(kftraining.JobRunning)}
			},
			stopped: func(o client.Object) {
				st := status(o)
				st.ReplicaStatuses = nil
				st.Conditions = []kftraining.JobCondition{condition(kftraining.JobSuspended)}
			},
			finished: func(o client.Object) {
				st := status(o)
				st.ReplicaStatuses = nil
				end := kftraining.JobFailed
				if succeeded {
					end = kftraining.JobSucceeded
				}
				st.Conditions = append(st.Conditions, condition(end))
			},
		}
	}
	return []driver{
		{
			integ: job.Integration(), hasTemplates: true, succeeded: true,
			pod: func(j client.Object, podSet string, i int) *corev1.Pod {
				return podOf(j, podSet, i, j, batchv1.SchemeGroupVersion.WithKind("Job")).Obj()
			},
			newJob: func(ns string) client.Object {
				return extensionstest.MakeJob("train", ns).Quota("team-a").Parallelism(2).Completions(2).
					Request("cpu", "1", "memory", "1Gi").PriorityClass("high").Obj()
			},
			wantPodSets: []podSetWant{{"main", 2}},
			wantRequest: qt.Res("cpu", "2", "memory", "2Gi"),
			running: func(o client.Object) {
				j := o.(*batchv1.Job)
				j.Status.StartTime, j.Status.Active, j.Status.Ready = &now, 2, ptr.To[int32](2)
			},
			// As the Job controller does, a suspended Job keeps its
			// startTime; the API server lets its scheduling directives
			// change only without one, so the extension clears it.
			stopped: func(o client.Object) {
				j := o.(*batchv1.Job)
				j.Status.Active, j.Status.Ready = 0, ptr.To[int32](0)
			},
			finished: func(o client.Object) {
				j := o.(*batchv1.Job)
				j.Status.Active, j.Status.Ready, j.Status.Succeeded, j.Status.CompletionTime = 0, ptr.To[int32](0), 2, &now
				j.Status.Conditions = []batchv1.JobCondition{
					{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now},
					{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now},
				}
			},
		},
		kubeflowDriver(kubeflow.TFJobIntegration(), func(ns string) client.Object {
			return extensionstest.MakeTFJob("train", ns).Quota("team-a").PriorityClass("high").
				Replica("Master", 1, "cpu", "1").Replica("Worker", 2, "cpu", "1").Obj()
		}, []kftraining.ReplicaType{"Master", "Worker"}, false),
		kubeflowDriver(kubeflow.PyTorchJobIntegration(), func(ns string) client.Object {
			return extensionstest.MakePyTorchJob("train", ns).Quota("team-a").PriorityClass("high").
				Replica("Master", 1, "cpu", "1").Replica("Worker", 2, "cpu", "1").Obj()
		}, []kftraining.ReplicaType{"Master", "Worker"}, true),
		func() driver {
			d := kubeflowDriver(kubeflow.MPIJobIntegration(), func(ns string) client.Object {
				return extensionstest.MakeMPIJob("train", ns).Quota("team-a").PriorityClass("high").
					Replica("Launcher", 1, "cpu", "1").Replica("Worker", 2, "cpu", "1").Obj()
			}, []kftraining.ReplicaType{"Launcher", "Worker"}, false)
			d.wantPodSets = []podSetWant{{"launcher", 1}, {"worker", 2}}
			return d
		}(),
		{
			integ: argo.Integration(), succeeded: true,
			pod: func(job client.Object, podSet string, i int) *corev1.Pod {
				return podOf(job, podSet, i, job, wfv1.SchemeGroupVersion.WithKind("Workflow")).Obj()
			},
			newJob: func(ns string) client.Object {
				return extensionstest.MakeWorkflow("train", ns).QueueTemplate().Quota("team-a").PriorityClass("high").
					MinResources("cpu: 5\nmemory: 5Gi").Suspend(true).Phase(wfv1.WorkflowRunning).
					Node("train-queue", wfv1.NodeTypeSuspend, schedulingv1alpha1.ArgoSuspendTemplate, wfv1.NodeRunning).Obj()
			},
			wantPodSets: []podSetWant{{"main", 1}},
			wantRequest: qt.Res("cpu", "5", "memory", "5Gi"),
			running: func(o client.Object) {
				w := o.(*wfv1.Workflow)
				w.Status.Nodes["train-main"] = wfv1.NodeStatus{ID: "train-main", Name: "train-main", Type: wfv1.NodeTypePod, TemplateName: "main", Phase: wfv1.NodeRunning}
			},
			stopped: func(o client.Object) {
				w := o.(*wfv1.Workflow)
				n := w.Status.Nodes["train-main"]
				n.Phase = wfv1.NodeFailed
				w.Status.Nodes["train-main"] = n
			},
			finished: func(o client.Object) {
				w := o.(*wfv1.Workflow)
				n := w.Status.Nodes["train-main"]
				n.Phase = wfv1.NodeSucceeded
				w.Status.Nodes["train-main"] = n
				w.Status.Phase = wfv1.WorkflowSucceeded
			},
		},
		{
			integ: ray.RayJobIntegration(), hasTemplates: true, succeeded: false,
			// KubeRay runs the cluster's pods in a RayCluster it makes and the
			// submitter's in a batch Job named after the RayJob.
			pod: func(job client.Object, podSet string, i int) *corev1.Pod {
				if podSet == ray.SubmitterPodSet {
					submitter := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: job.GetName(), UID: job.GetUID() + "-submitter"}}
					return podOf(job, podSet, i, submitter, batchv1.SchemeGroupVersion.WithKind("Job")).Obj()
				}
				cluster := &rayv1.RayCluster{ObjectMeta: metav1.ObjectMeta{Name: rayJobCluster(job), UID: job.GetUID() + "-cluster"}}
				return rayPod(job, podSet, i, cluster)
			},
			newJob: func(ns string) client.Object {
				return extensionstest.MakeRayJob("train", ns, rayCluster()).Quota("team-a").Obj()
			},
			wantPodSets: []podSetWant{{"head", 1}, {"workers", 2}, {"submitter", 1}},
			// The submitter asks for 500m and 200Mi; each of the two workers'
			// wait-gcs-ready init containers (which KubeRay adds) for 256Mi.
			wantRequest: qt.Res("cpu", "5500m", "memory", "712Mi"),
			running: func(o client.Object) {
				j := o.(*rayv1.RayJob)
				j.Status.JobDeploymentStatus, j.Status.JobStatus = rayv1.JobDeploymentStatusRunning, rayv1.JobStatusRunning
				j.Status.RayClusterName = rayJobCluster(j)
				j.Status.RayClusterStatus = rayv1.RayClusterStatus{ReadyWorkerReplicas: 2, Conditions: []metav1.Condition{{
					Type: string(rayv1.HeadPodReady), Status: metav1.ConditionTrue, Reason: rayv1.HeadPodRunningAndReady, LastTransitionTime: now}}}
			},
			stopped: func(o client.Object) {
				j := o.(*rayv1.RayJob)
				j.Status.JobDeploymentStatus, j.Status.JobStatus = rayv1.JobDeploymentStatusSuspended, ""
				j.Status.RayClusterStatus = rayv1.RayClusterStatus{}
			},
			finished: func(o client.Object) {
				j := o.(*rayv1.RayJob)
				j.Status.JobDeploymentStatus, j.Status.JobStatus, j.Status.Message = rayv1.JobDeploymentStatusComplete, rayv1.JobStatusFailed, "exit 1"
				j.Status.RayClusterStatus = rayv1.RayClusterStatus{}
			},
		},
		{
			// Spark's pod sets are made up from the application's sizes:
			// pod set updates do not reach its pods.
			integ: spark.Integration(), succeeded: true,
			pod: func(job client.Object, podSet string, i int) *corev1.Pod {
				return sparkPod(job, podSet, i)
			},
			newJob: func(ns string) client.Object {
				return extensionstest.MakeSparkApplication("train", ns).Quota("team-a").PriorityClass("high").
					Driver(1, "1g").Executors(2, 1, "2g").Obj()
			},
			wantPodSets: []podSetWant{{"driver", 1}, {"executor", 2}},
			// Spark's default memory overhead, 384 MiB, is added to each pod:
			// 1408Mi for the driver, 2432Mi for each executor.
			wantRequest: qt.Res("cpu", "3", "memory", "6272Mi"),
			running: func(o client.Object) {
				a := o.(*sparkv1beta2.SparkApplication)
				a.Status.AppState.State = sparkv1beta2.ApplicationStateRunning
				a.Status.DriverInfo.PodName = a.Name + "-driver"
				a.Status.ExecutorState = map[string]sparkv1beta2.ExecutorState{"train-exec-1": sparkv1beta2.ExecutorStateRunning, "train-exec-2": sparkv1beta2.ExecutorStateRunning}
			},
			stopped: func(o client.Object) {
				a := o.(*sparkv1beta2.SparkApplication)
				a.Status.AppState.State = sparkv1beta2.ApplicationStateSuspended
				a.Status.ExecutorState = nil
			},
			finished: func(o client.Object) {
				a := o.(*sparkv1beta2.SparkApplication)
				a.Status.AppState.State = sparkv1beta2.ApplicationStateCompleted
				a.Status.ExecutorState = map[string]sparkv1beta2.ExecutorState{"train-exec-1": sparkv1beta2.ExecutorStateCompleted, "train-exec-2": sparkv1beta2.ExecutorStateCompleted}
			},
		},
		{
			integ: ray.RayClusterIntegration(), hasTemplates: true,
			pod: func(job client.Object, podSet string, i int) *corev1.Pod {
				return rayPod(job, podSet, i, job)
			},
			newJob: func(ns string) client.Object {
				return extensionstest.MakeRayCluster("train", ns, rayCluster()).Quota("team-a").Obj()
			},
			wantPodSets: []podSetWant{{"head", 1}, {"workers", 2}},
			// The workers' wait-gcs-ready init containers ask for 256Mi each.
			wantRequest: qt.Res("cpu", "5", "memory", "512Mi"),
			running: func(o client.Object) {
				c := o.(*rayv1.RayCluster)
				c.Status.ReadyWorkerReplicas = 2
				c.Status.Conditions = []metav1.Condition{{Type: string(rayv1.HeadPodReady), Status: metav1.ConditionTrue,
					Reason: rayv1.HeadPodRunningAndReady, LastTransitionTime: now}}
			},
			stopped: func(o client.Object) {
				o.(*rayv1.RayCluster).Status = rayv1.RayClusterStatus{}
			},
		},
	}
}

// TestLifecycle follows one job of each framework through its whole life:
// queued, admitted and released with its admission checks' pod set updates,
// running, evicted and suspended with its templates restored, its quota
// given back once its pods are gone, admitted again, finished, deleted.
func TestLifecycle(t *testing.T) {
	for _, d := range drivers() {
		t.Run(d.integ.Name, func(t *testing.T) {
			t.Parallel()
			testLifecycle(t, d)
		})
	}
}

func testLifecycle(t *testing.T, d driver) {
	ctx := context.Background()
	ns := newNamespace(t)
	obj := d.newJob(ns)
	create(t, obj)
	jobKey := client.ObjectKeyFromObject(obj)
	unitKey := client.ObjectKey{Namespace: ns, Name: d.integ.UnitName(obj.GetName())}
	firstPodSet := d.wantPodSets[0].Name

	// Submitted suspended: a unit of the job's pod sets, request and priority.
	u := unitWhere(t, unitKey, "Enqueued", func(u *schedulingv1alpha1.QueueUnit) bool { return u.EffectivePhase() == schedulingv1alpha1.Enqueued })
	var gotSets []podSetWant
	for _, ps := range u.Spec.PodSets {
		gotSets = append(gotSets, podSetWant{ps.Name, ps.Count})
	}
	if diff := cmp.Diff(d.wantPodSets, gotSets); diff != "" {
		t.Errorf("pod sets (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(d.wantRequest, u.Spec.Request); diff != "" {
		t.Errorf("request (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(u.Spec.Request, u.Spec.Resource); diff != "" {
		t.Errorf("resource differs from request (-request +resource):\n%s", diff)
	}
	if got := ptr.Deref(u.Spec.Priority, -1); got != highPriority || u.Spec.PriorityClassName != "high" {
		t.Errorf("priority %d of class %q, want %d of class high", got, u.Spec.PriorityClassName, highPriority)
	}
	owner := metav1.GetControllerOf(u)
	if owner == nil || owner.UID != obj.GetUID() || owner.Kind != d.integ.GVK.Kind || !ptr.Deref(owner.BlockOwnerDeletion, false) {
		t.Errorf("controller reference %+v, want the job (UID %s) blocking its deletion", owner, obj.GetUID())
	}
	if u.Labels[elasticquotav1alpha1.LabelQuotaName] != "team-a" {
		t.Errorf("labels %v, want the job's quota label", u.Labels)
	}
	if ref := u.Spec.ConsumerRef; ref == nil || ref.Name != obj.GetName() || ref.Kind != d.integ.GVK.Kind || ref.APIVersion != d.integ.GVK.GroupVersion().String() {
		t.Errorf("consumerRef %+v, want the job", ref)
	}

	// Admitted, with an admission check's pod set update: the job runs
	// with it.
	admit(t, unitKey, schedulingv1alpha1.AdmissionCheckState{
		Name: "provisioning", State: schedulingv1alpha1.CheckStateReady, LastTransitionTime: metav1.Now(),
		PodSetUpdates: []schedulingv1alpha1.PodSetUpdate{{
			Name: firstPodSet, NodeSelector: map[string]string{"zone": "z1"}, Labels: map[string]string{"provisioned": "yes"},
			Tolerations: []corev1.Toleration{{Key: "reserved", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
		}},
	})
	jobWhere(t, d.integ, jobKey, "released with the pod set update", func(j framework.GenericJob) bool {
		return !j.IsSuspended() && (!d.hasTemplates || templateOf(t, j, firstPodSet).Spec.NodeSelector["zone"] == "z1")
	})
	// The unit says whether the update reached the job's pods: a made-up
	// template's pods are the framework's own.
	wantApplied := metav1.ConditionTrue
	if !d.hasTemplates {
		wantApplied = metav1.ConditionFalse
		eventRecorded(t, ns, obj.GetName(), corev1.EventTypeWarning, framework.ReasonPodSetUpdatesNotApplied, firstPodSet)
		eventRecorded(t, ns, unitKey.Name, corev1.EventTypeWarning, framework.ReasonPodSetUpdatesNotApplied, firstPodSet)
	}
	unitWhere(t, unitKey, "PodSetUpdatesApplied "+string(wantApplied), func(u *schedulingv1alpha1.QueueUnit) bool {
		c := apimeta.FindStatusCondition(u.Status.Conditions, schedulingv1alpha1.QueueUnitPodSetUpdatesApplied)
		return c != nil && c.Status == wantApplied
	})
	if w, ok := obj.(*wfv1.Workflow); ok {
		_ = k8s.Get(ctx, jobKey, w)
		if n := w.Status.Nodes["train-queue"]; n.Phase != wfv1.NodeSucceeded {
			t.Errorf("the koord-queue-suspend node is %s, want Succeeded as `argo resume` leaves it", n.Phase)
		}
	}

	// Its pods run: so does its unit. (admissions[].running counts pods on
	// nodes: TestPodsOnNodesAreCounted.)
	updateJobStatus(t, obj, func() { d.running(obj) })
	unitWhere(t, unitKey, "Running with its pods counted", func(u *schedulingv1alpha1.QueueUnit) bool {
		return u.Status.Phase == schedulingv1alpha1.Running && u.Status.PodState.Running > 0
	})

	// Evicted: suspended again; once its pods are gone, its templates are as
	// they were queued and its unit gives its quota back.
	evict(t, unitKey)
	jobWhere(t, d.integ, jobKey, "suspended", func(j framework.GenericJob) bool { return j.IsSuspended() })
	eventRecorded(t, ns, obj.GetName(), corev1.EventTypeNormal, framework.ReasonSuspended, schedulingv1alpha1.EvictedByPreemption)
	updateJobStatus(t, obj, func() { d.stopped(obj) })
	if d.hasTemplates {
		j := jobWhere(t, d.integ, jobKey, "its templates restored", func(j framework.GenericJob) bool {
			return templateOf(t, j, firstPodSet).Spec.NodeSelector["zone"] == ""
		})
		tmpl := templateOf(t, j, firstPodSet)
		if len(tmpl.Spec.Tolerations) != 0 || tmpl.Labels["provisioned"] != "" {
			t.Errorf("after eviction the template keeps the update: tolerations %v, labels %v", tmpl.Spec.Tolerations, tmpl.Labels)
		}
	}
	unitWhere(t, unitKey, "Enqueued without admissions, nor a say on the last updates", func(u *schedulingv1alpha1.QueueUnit) bool {
		return u.EffectivePhase() == schedulingv1alpha1.Enqueued && len(u.Status.Admissions) == 0 &&
			apimeta.FindStatusCondition(u.Status.Conditions, schedulingv1alpha1.QueueUnitPodSetUpdatesApplied) == nil
	})

	// Admitted again, with another update: it runs with that one; finished,
	// its unit ends and holds nothing.
	admit(t, unitKey, schedulingv1alpha1.AdmissionCheckState{
		Name: "provisioning", State: schedulingv1alpha1.CheckStateReady, LastTransitionTime: metav1.Now(),
		PodSetUpdates: []schedulingv1alpha1.PodSetUpdate{{Name: firstPodSet, NodeSelector: map[string]string{"zone": "z2"}}},
	})
	jobWhere(t, d.integ, jobKey, "released again with the second update", func(j framework.GenericJob) bool {
		return !j.IsSuspended() && (!d.hasTemplates || templateOf(t, j, firstPodSet).Spec.NodeSelector["zone"] == "z2")
	})
	updateJobStatus(t, obj, func() { d.running(obj) })
	unitWhere(t, unitKey, "Running again", func(u *schedulingv1alpha1.QueueUnit) bool { return u.Status.Phase == schedulingv1alpha1.Running })
	if d.finished != nil {
		updateJobStatus(t, obj, func() { d.finished(obj) })
		want, reason := schedulingv1alpha1.Failed, queueunit.ReasonFailed
		if d.succeeded {
			want, reason = schedulingv1alpha1.Succeed, queueunit.ReasonSucceeded
		}
		unitWhere(t, unitKey, string(want)+" holding nothing", func(u *schedulingv1alpha1.QueueUnit) bool {
			c := apimeta.FindStatusCondition(u.Status.Conditions, schedulingv1alpha1.QueueUnitFinished)
			return u.Status.Phase == want && len(u.Status.Admissions) == 0 &&
				c != nil && c.Status == metav1.ConditionTrue && c.Reason == reason
		})
	}

	// Deleted: its unit goes with it.
	if err := k8s.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatal(err)
	}
	unitGone(t, unitKey)
}

// templateOf is the template of a job's pod set.
func templateOf(t *testing.T, j framework.GenericJob, name string) *corev1.PodTemplateSpec {
	t.Helper()
	sets, err := j.PodSets()
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(sets, func(s framework.PodSet) bool { return s.Name == name })
	if i < 0 {
		t.Fatalf("the job has no pod set %s", name)
	}
	return sets[i].Template
}
