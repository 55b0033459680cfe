package admission

import (
	"context"
	"fmt"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/extensionstest"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
	"github.com/koord-queue/koord-queue/pkg/extensions/job"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/test/testenv"
)

// TestPartialAdmissionOfAJob runs koord-queue and the batch Job extension,
// each in its own manager as they are deployed: a Job of 4 pods that may
// start with 2, in a quota with room for 2, is released with parallelism 2,
// its unit's admission says 2 replicas, and once the unit is evicted the
// Job asks for its 4 pods again.
func TestPartialAdmissionOfAJob(t *testing.T) {
	ctx := context.Background()
	cache := startKoordQueue(t, fastOptions())
	stop, err := env.StartManager(ctx, func(mgr manager.Manager) error {
		if err := framework.SetupIndexes(ctx, mgr.GetFieldIndexer()); err != nil {
			return err
		}
		recorder := mgr.GetEventRecorderFor("koord-queue-controllers")
		return framework.NewJobReconciler(mgr.GetClient(), mgr.GetAPIReader(), recorder, job.Integration()).SetupWithManager(mgr)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)

	cases := []struct {
		name string
		job  func(ns string) *batchv1.Job
		// wantCompletions while it runs 2 pods, and once it asks for 4 again.
		wantCompletions [2]*int32
	}{
		{
			name: "parallelism is lowered",
			job: func(ns string) *batchv1.Job {
				return extensionstest.MakeJob("train", ns).Quota(ns).Parallelism(4).Completions(8).Request("cpu", "1").
					Annotation(schedulingv1alpha1.AnnotationJobMinParallelism, "2").Obj()
			},
			wantCompletions: [2]*int32{ptr.To[int32](8), ptr.To[int32](8)},
		},
		{
			name: "completions kept equal to parallelism are lowered with it",
			job: func(ns string) *batchv1.Job {
				return extensionstest.MakeJob("train", ns).Quota(ns).Indexed().Parallelism(4).Completions(4).Request("cpu", "1").
					Annotation(schedulingv1alpha1.AnnotationJobMinParallelism, "2").
					Annotation(schedulingv1alpha1.AnnotationJobCompletionsEqualParallelism, "true").Obj()
			},
			wantCompletions: [2]*int32{ptr.To[int32](2), ptr.To[int32](4)},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ns := namespace(t)
			create(t, wrappers.MakeElasticQuota(ns, ns).Max(corev1.ResourceCPU, "2").Obj())
			j := tc.job(ns)
			create(t, j)

			jobIs := func(what string, ok func(*batchv1.Job) bool) {
				t.Helper()
				seen := "nothing"
				testenv.Eventually(t, testenv.DefaultTimeout, func(ctx context.Context) error {
					var got batchv1.Job
					if err := env.Client.Get(ctx, client.ObjectKeyFromObject(j), &got); err != nil {
						return fmt.Errorf("waiting for the Job to be %s; last seen: %s: %w", what, seen, err)
					}
					seen = fmt.Sprintf("suspend %v, parallelism %d, completions %v, annotations %v", ptr.Deref(got.Spec.Suspend, false),
						ptr.Deref(got.Spec.Parallelism, 1), ptr.Deref(got.Spec.Completions, -1), got.Annotations)
					if !ok(&got) {
						return fmt.Errorf("waiting for the Job to be %s; last seen: %s", what, seen)
					}
					return nil
				})
			}
			jobIs("released with 2 pods", func(got *batchv1.Job) bool {
				return !ptr.Deref(got.Spec.Suspend, true) && ptr.Deref(got.Spec.Parallelism, 0) == 2 && ptr.Equal(got.Spec.Completions, tc.wantCompletions[0])
			})

			u, err := getUnit(ctx, ns, "train")
			if err != nil {
				t.Fatal(err)
			}
			if got := u.Status.Admissions; len(got) != 1 || got[0].Replicas != 2 || got[0].Resources.Cpu().String() != "2" {
				t.Errorf("admissions %+v, want pod set main holding 2 replicas, 2 cpu", got)
			}
			if want := "2 of 4 pods of pod set main (partial admission)"; !strings.Contains(u.Status.Message, want) {
				t.Errorf("message %q, want it to say %q", u.Status.Message, want)
			}
			if v, _ := cache.QueueUnit(ns, "train"); v.PartialAdmission != "2 of 4 pods of pod set main" || v.Request.Cpu().String() != "2" {
				t.Errorf("the visibility API shows partial admission %q, request %v; want 2 of 4 pods of pod set main, holding 2 cpu", v.PartialAdmission, v.Request)
			}
			testenv.Eventually(t, testenv.DefaultTimeout, func(ctx context.Context) error {
				if ok, err := hasEvent(ctx, ns, "train", queueunit.EventScheduled); err != nil || !ok {
					return fmt.Errorf("waiting for the unit's %s event (err %v)", queueunit.EventScheduled, err)
				}
				return nil
			})

			// Evicted (deactivated): the Job is suspended and asks for its
			// 4 pods again, and its unit for as many. The unit is read
			// afresh until the write lands: koord-queue and the extension
			// write it too.
			testenv.Eventually(t, testenv.DefaultTimeout, func(ctx context.Context) error {
				u, err := getUnit(ctx, ns, "train")
				if err != nil {
					return err
				}
				u.Spec.Active = ptr.To(false)
				return env.Client.Update(ctx, u)
			})
			jobIs("suspended with its parallelism of 4 back", func(got *batchv1.Job) bool {
				_, lowered := got.Annotations[schedulingv1alpha1.AnnotationOriginalParallelism]
				return ptr.Deref(got.Spec.Suspend, false) && ptr.Deref(got.Spec.Parallelism, 0) == 4 &&
					ptr.Equal(got.Spec.Completions, tc.wantCompletions[1]) && !lowered
			})
			testenv.Eventually(t, testenv.DefaultTimeout, func(ctx context.Context) error {
				u, err := getUnit(ctx, ns, "train")
				if err != nil {
					return err
				}
				if queueunit.HoldsQuota(u) || u.Spec.PodSets[0].Count != 4 {
					return fmt.Errorf("waiting for the unit to give its quota back, asking for 4 pods; last seen: phase %s, admissions %+v, count %d",
						u.EffectivePhase(), u.Status.Admissions, u.Spec.PodSets[0].Count)
				}
				return nil
			})
		})
	}
}
