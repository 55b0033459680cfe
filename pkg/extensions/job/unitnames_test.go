package job

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
)

// TestReleasedTemplatesNameTheirUnit: the release names the Job's pod
// template for its unit, as Koord-Queue v1.8 does, so that each pod is
// charged to the unit's quota whatever owns it (koord-queue's pod ledger);
// held again after an eviction, the Job keeps the names, so that its next
// release changes no template a started Job keeps locked.
func TestReleasedTemplatesNameTheirUnit(t *testing.T) {
	ctx := context.Background()
	c, j, reconcile := admittedJob(t)
	names := func() map[string]string {
		t.Helper()
		got := &batchv1.Job{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(j), got); err != nil {
			t.Fatal(err)
		}
		a := got.Spec.Template.Annotations
		return map[string]string{"unit": a[schedulingv1alpha1.AnnotationRelatedQueueUnit], "podSet": a[schedulingv1alpha1.AnnotationRelatedPodSet],
			"suspended": map[bool]string{true: "yes", false: "no"}[got.Spec.Suspend != nil && *got.Spec.Suspend]}
	}
	want := map[string]string{"unit": "ns/j", "podSet": "main", "suspended": "no"}
	if diff := cmp.Diff(want, names()); diff != "" {
		t.Errorf("released (-want +got):\n%s", diff)
	}

	u, _ := reconcile()
	queueunit.Evict(u, schedulingv1alpha1.EvictedByPreemption, "preempted", metav1.Now())
	if err := c.Status().Update(ctx, u); err != nil {
		t.Fatal(err)
	}
	reconcile() // suspends it
	reconcile() // restores its templates
	want["suspended"] = "yes"
	if diff := cmp.Diff(want, names()); diff != "" {
		t.Errorf("held again (-want +got):\n%s", diff)
	}
}
