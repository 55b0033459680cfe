package extensions

import (
	"context"
	"errors"
	"testing"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/extensionstest"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
	"github.com/koord-queue/koord-queue/pkg/extensions/job"
	"github.com/koord-queue/koord-queue/pkg/patch"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
)

// TestResizeRacingAnAdmission: a resize decided on a waiting unit and
// written after the queue admitted it conflicts on the API server; the
// retry reads the admitted unit and refuses the resize, so the unit keeps
// the size it was admitted with, and its Job, grown, is queued again rather
// than released with more pods than were admitted.
func TestResizeRacingAnAdmission(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t)
	j := extensionstest.MakeJob("raced", ns).Quota("team-a").Parallelism(2).Request("cpu", "1").Obj()
	create(t, j)
	key := client.ObjectKeyFromObject(j)
	waiting := unitWhere(t, key, "Enqueued", func(u *schedulingv1alpha1.QueueUnit) bool {
		return u.EffectivePhase() == schedulingv1alpha1.Enqueued
	}).DeepCopy()
	admit(t, key)

	// The extension's resize, decided on the waiting unit it read.
	_, err := patch.Patch(ctx, k8s, k8s, waiting, patch.Main, framework.FieldOwner, func(u *schedulingv1alpha1.QueueUnit) bool {
		u.Spec.PodSets[0].Count = 6
		return true
	})
	if !errors.Is(err, queueunit.ErrHoldsQuota) {
		t.Errorf("resizing the unit admitted meanwhile: %v, want %v", err, queueunit.ErrHoldsQuota)
	}
	first := unitWhere(t, key, "admitted at 2 pods", func(u *schedulingv1alpha1.QueueUnit) bool {
		return queueunit.HoldsQuota(u) && u.Spec.PodSets[0].Count == 2
	})

	jobWhere(t, job.Integration(), key, "released", func(j framework.GenericJob) bool { return !j.IsSuspended() })
	updateJob(t, j, func() { j.Spec.Parallelism = ptr.To[int32](6) })
	unitWhere(t, key, "a new unit of 6 pods", func(u *schedulingv1alpha1.QueueUnit) bool {
		return u.UID != first.UID && u.Spec.PodSets[0].Count == 6 && u.EffectivePhase() == schedulingv1alpha1.Enqueued
	})
	jobWhere(t, job.Integration(), key, "suspended", func(j framework.GenericJob) bool { return j.IsSuspended() })
}
