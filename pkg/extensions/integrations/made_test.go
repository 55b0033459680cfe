package integrations

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/extensionstest"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework/frameworktest"
	"github.com/koord-queue/koord-queue/pkg/extensions/ray"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
)

// TestJobsARayJobMadePastItsAdmission: the RayCluster and the Job KubeRay
// makes for a RayJob run within the RayJob's admission, whatever their
// size, so a RayJob is measured by them too once released: a cluster a
// tenant scales or grows per pod past the RayJob's admission, or a second
// cluster or Job made under it by hand, suspends the RayJob (Warning
// ExceedsAdmission naming them) to be queued again, and KubeRay makes its
// cluster afresh from its spec, even once what it made is gone. What
// KubeRay makes as the RayJob asks,
// and what runs nothing or has a unit of its own, changes nothing.
func TestJobsARayJobMadePastItsAdmission(t *testing.T) {
	const uid = types.UID("rj-uid")
	spec := func() *rayv1.RayClusterSpec {
		return extensionstest.MakeRayClusterSpec("cpu", "1").WorkerGroup("workers", 2, "cpu", "1").Obj()
	}
	madeBy := metav1.OwnerReference{APIVersion: "ray.io/v1", Kind: "RayJob", Name: "rj", UID: uid, Controller: ptr.To(true)}
	// clusterOf is the cluster KubeRay makes for the RayJob, running,
	// changed by change.
	clusterOf := func(name string, change func(*rayv1.RayClusterSpec)) *rayv1.RayCluster {
		s := spec()
		if change != nil {
			change(s)
		}
		return extensionstest.MakeRayCluster(name, "ns", s).Quota("team-a").Suspend(false).OwnedBy(madeBy).Obj()
	}
	// submitter is the Job KubeRay makes from its default submitter
	// template, running.
	submitter := func(name string) *extensionstest.JobWrapper {
		return extensionstest.MakeJob(name, "ns").Quota("team-a").Suspend(false).
			Request("cpu", "500m", "memory", "200Mi").OwnedBy(madeBy)
	}
	workers := func(n int32, cpu string) func(*rayv1.RayClusterSpec) {
		return func(s *rayv1.RayClusterSpec) {
			g := &s.WorkerGroupSpecs[0]
			g.Replicas, g.MaxReplicas = ptr.To(n), ptr.To(n)
			g.Template.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse(cpu)
		}
	}
	byAnother := clusterOf("theirs", workers(9, "1"))
	byAnother.OwnerReferences[0].UID = "another-uid"
	deleted := clusterOf("going", workers(9, "1"))
	deleted.Finalizers = []string{"test/deleting"} // deleted once made
	queuedByItself := clusterOf("alone", workers(9, "1"))
	queuedByItself.UID = "alone-uid"
	ownUnit := &schedulingv1alpha1.QueueUnit{ObjectMeta: metav1.ObjectMeta{
		Name: ray.RayClusterIntegration().UnitName("alone"), Namespace: "ns",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "ray.io/v1", Kind: "RayCluster", Name: "alone", UID: "alone-uid", Controller: ptr.To(true)}},
	}}

	cases := map[string]struct {
		mode rayv1.JobSubmissionMode
		made []client.Object
		// want is the start of the ExceedsAdmission Warning's phrase in
		// parentheses; "" when the RayJob runs on.
		want string
	}{
		"the cluster and submitter KubeRay made as the RayJob asks run on": {
			made: []client.Object{clusterOf("rj-abc", nil), submitter("rj").Obj()},
		},
		"a cluster in SidecarMode, whose head has KubeRay's submitter, runs on": {
			mode: rayv1.SidecarMode,
			made: []client.Object{clusterOf("rj-abc", func(s *rayv1.RayClusterSpec) {
				s.HeadGroupSpec.Template.Spec.Containers = append(s.HeadGroupSpec.Template.Spec.Containers, corev1.Container{
					Name: "ray-job-submitter", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("200Mi")}},
				})
			})},
		},
		"a cluster scaled down runs on": {
			made: []client.Object{clusterOf("rj-abc", workers(1, "1"))},
		},
		"a cluster whose workers are scaled past the admission": {
			made: []client.Object{clusterOf("rj-abc", workers(5, "1"))},
			want: "in RayCluster rj-abc: pod set workers: 5 pods, admitted 2",
		},
		"a cluster whose workers grew per pod": {
			made: []client.Object{clusterOf("rj-abc", workers(2, "7"))},
			want: "in RayCluster rj-abc: pod set workers: cpu per pod 1 -> 7",
		},
		"a second cluster made under the RayJob by hand": {
			made: []client.Object{clusterOf("rj-abc", nil), clusterOf("mine", nil)},
			want: "in RayCluster mine, RayCluster rj-abc: pod set head: 2 pods, admitted 1",
		},
		"a Job made under the RayJob by hand, beside its submitter": {
			made: []client.Object{submitter("rj").Obj(), submitter("mine").Parallelism(8).Obj()},
			want: "in Job mine, Job rj: pod set submitter: 9 pods, admitted 1",
		},
		"a Job made under the RayJob that ended runs nothing": {
			made: []client.Object{submitter("mine").Parallelism(8).Condition(batchv1.JobFailed, "").Obj()},
		},
		"a suspended cluster runs nothing": {
			made: []client.Object{func() client.Object {
				c := clusterOf("mine", workers(9, "1"))
				c.Spec.Suspend = ptr.To(true)
				return c
			}()},
		},
		"a cluster being deleted, or another RayJob's, counts nothing": {
			made: []client.Object{deleted, byAnother},
		},
		"a thousand clusters of long names made by hand": {
			made: func() []client.Object {
				var made []client.Object
				for i := range 1100 {
					made = append(made, clusterOf(fmt.Sprintf("%0240d", i), nil))
				}
				return made
			}(),
			want: "in RayCluster 0000",
		},
		"a cluster queued by itself counts nothing": {
			made: []client.Object{queuedByItself, ownUnit},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			integ := ray.RayJobIntegration()
			w := extensionstest.MakeRayJob("rj", "ns", spec()).Quota("team-a")
			if tc.mode != "" {
				w.SubmissionMode(tc.mode)
			}
			rj := w.Obj()
			rj.UID = uid
			c := frameworktest.WithJobIndexes(frameworktest.ClientBuilder(t, scheme(t)), All()...).WithObjects(rj).
				WithStatusSubresource(&schedulingv1alpha1.QueueUnit{}, &rayv1.RayJob{}).Build()
			recorder := record.NewFakeRecorder(100)
			scope, err := Scope(All(), false, false)
			if err != nil {
				t.Fatal(err)
			}
			r := framework.NewJobReconciler(c, c, recorder, integ, framework.WithStatusDelay(0), framework.WithScope(scope))
			req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(rj)}
			reconcile := func() {
				t.Helper()
				if _, err := r.Reconcile(ctx, req); err != nil {
					t.Fatalf("Reconcile: %v", err)
				}
			}
			suspended := func() bool {
				t.Helper()
				var got rayv1.RayJob
				if err := c.Get(ctx, req.NamespacedName, &got); err != nil {
					t.Fatal(err)
				}
				return got.Spec.Suspend
			}

			reconcile()
			var u schedulingv1alpha1.QueueUnit
			if err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: integ.UnitName("rj")}, &u); err != nil {
				t.Fatal(err)
			}
			queueunit.Admit(&u, "team-a", queueunit.Request(&u), nil, nil, metav1.Now())
			if err := c.Status().Update(ctx, &u); err != nil {
				t.Fatal(err)
			}
			reconcile()
			if suspended() {
				t.Fatal("the admitted RayJob was not released")
			}
			for _, o := range tc.made {
				if err := c.Create(ctx, o); err != nil {
					t.Fatal(err)
				}
				if slices.Contains(o.GetFinalizers(), "test/deleting") {
					if err := c.Delete(ctx, o); err != nil {
						t.Fatal(err)
					}
				}
			}
			reconcile()

			var warnings []string
			for len(recorder.Events) > 0 {
				if e := <-recorder.Events; strings.HasPrefix(e, "Warning") {
					warnings = append(warnings, e)
				}
			}
			if tc.want == "" {
				if suspended() || len(warnings) > 0 {
					t.Errorf("the RayJob was suspended %v, with Warnings %q; want it to run on", suspended(), warnings)
				}
				return
			}
			if !suspended() {
				t.Errorf("the RayJob runs on; want it suspended to be queued again (%s)", tc.want)
			}
			// The mark names what grew, bounded whatever the tenant made:
			// a unit's annotations may not pass 256 KiB on the API server.
			if err := c.Get(ctx, client.ObjectKeyFromObject(&u), &u); client.IgnoreNotFound(err) != nil {
				t.Fatal(err)
			} else if err == nil {
				if mark := u.Annotations["koord-queue/outgrown"]; len(mark) > 1024 {
					t.Errorf("the unit's koord-queue/outgrown mark is %d bytes, want at most 1024", len(mark))
				}
			}
			for _, e := range warnings {
				if len(e) > 2048 {
					t.Errorf("a Warning of %d bytes, want it bounded", len(e))
				}
			}
			want := "Warning ExceedsAdmission The job asks for more than QueueUnit rj-ray-qu was admitted with (" + tc.want
			if !slices.ContainsFunc(warnings, func(e string) bool { return strings.HasPrefix(e, want) }) {
				t.Errorf("Warnings %q, want one starting %q", warnings, want)
			}
			// KubeRay deletes what it made as the RayJob is suspended; the
			// pods it grew may still hold their nodes. The decision holds:
			// the RayJob is queued again, not released again under this
			// admission.
			for _, o := range tc.made {
				if err := c.Delete(ctx, o); err != nil {
					t.Fatal(err)
				}
			}
			for range 3 {
				reconcile()
			}
			if !suspended() {
				t.Error("released again under its admission once what it made was gone; want it queued again")
			}
		})
	}
}
