package job

import (
	"context"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/koord-queue/koord-queue/apis"
	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/extensionstest"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
)

// TestReconcileRunningJobs: which jobs that run without a unit the
// reconciler takes in (a unit, and the job suspended until it is admitted),
// and which it leaves alone.
func TestReconcileRunningJobs(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := apis.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := batchv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		job        *batchv1.Job
		scope      framework.Scope
		wantQueued bool
	}{
		"--manage-all-jobs takes in an unlabelled Job submitted running": {
			job:        extensionstest.MakeJob("j", "ns").Suspend(false).Request("cpu", "1").Obj(),
			scope:      framework.Scope{ManageAllJobs: true},
			wantQueued: true,
		},
		"by default a labelled Job submitted running is left alone": {
			job: extensionstest.MakeJob("j", "ns").Quota("team-a").Suspend(false).Request("cpu", "1").Obj(),
		},
		"a released Job that runs without its unit lost it, and is taken in": {
			job: extensionstest.MakeJob("j", "ns").Quota("team-a").Suspend(false).Request("cpu", "1").
				Annotation(schedv1alpha1.AnnotationReleasedBy, "uid-of-a-deleted-unit").Obj(),
			wantQueued: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tc.job).
				WithStatusSubresource(&schedv1alpha1.QueueUnit{}, &batchv1.Job{}).
				WithIndex(&elasticquotav1alpha1.ElasticQuota{}, framework.IndexQuotaNamespaces, framework.QuotaNamespacesIndex).Build()
			r := framework.NewJobReconciler(c, c, record.NewFakeRecorder(100), Integration(), framework.WithScope(tc.scope))
			req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(tc.job)}
			// One pass creates the unit, the next holds the job for it.
			for range 2 {
				if _, err := r.Reconcile(ctx, req); err != nil {
					t.Fatalf("Reconcile: %v", err)
				}
			}
			var unit schedv1alpha1.QueueUnit
			err := c.Get(ctx, req.NamespacedName, &unit)
			if queued := err == nil; queued != tc.wantQueued {
				t.Errorf("unit exists %v (get: %v), want %v", queued, err, tc.wantQueued)
			} else if err != nil && !apierrors.IsNotFound(err) {
				t.Fatal(err)
			}
			var got batchv1.Job
			if err := c.Get(ctx, req.NamespacedName, &got); err != nil {
				t.Fatal(err)
			}
			if suspended := (*Job)(&got).IsSuspended(); suspended != tc.wantQueued {
				t.Errorf("job suspended %v, want %v", suspended, tc.wantQueued)
			}
		})
	}
}
