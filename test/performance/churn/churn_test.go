package churn

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/test/testenv"
)

// TestRoundWritesKoordSchedulerFigures: a round writes every quota's
// figures and status.used, in one patch a quota, and leaves what koord-queue
// reads alone; the next round writes other values.
func TestRoundWritesKoordSchedulerFigures(t *testing.T) {
	scheme, err := testenv.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"a", "b", "c"}
	// No status subresource, as Koordinator's CRD has none.
	builder := fake.NewClientBuilder().WithScheme(scheme)
	for _, name := range names {
		builder.WithObjects(wrappers.MakeElasticQuota(name, "quotas").Max(corev1.ResourceCPU, "4").Obj())
	}
	c := &Churner{Client: builder.Build(), Namespace: "quotas", Names: names}

	type seen struct {
		Figures map[string]string
		Used    string
		Max     string
	}
	look := func(round int) (got, want map[string]seen) {
		got, want = map[string]seen{}, map[string]seen{}
		for i, name := range names {
			eq := &elasticquotav1alpha1.ElasticQuota{}
			if err := c.Client.Get(context.Background(), client.ObjectKey{Namespace: "quotas", Name: name}, eq); err != nil {
				t.Fatal(err)
			}
			s := seen{Figures: map[string]string{}, Used: eq.Status.Used.Cpu().String(), Max: eq.Spec.Max.Cpu().String()}
			w := seen{Figures: map[string]string{}, Used: Figure(round, i), Max: "4"}
			for _, key := range elasticquotav1alpha1.KoordSchedulerFigures {
				s.Figures[key] = eq.Annotations[key]
				w.Figures[key] = fmt.Sprintf(`{"cpu":%q}`, Figure(round, i))
			}
			got[name], want[name] = s, w
		}
		return got, want
	}
	for round := range 2 {
		patches, failed, err := c.Round(context.Background(), round)
		if patches != PatchesPerQuota*len(names) || failed != 0 || err != nil {
			t.Fatalf("round %d: %d patches, %d failed (last error %v); want %d and none", round, patches, failed, err, PatchesPerQuota*len(names))
		}
		got, want := look(round)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("after round %d (-want +got):\n%s", round, diff)
		}
	}
	if Figure(0, 0) == Figure(1, 0) {
		t.Errorf("round 0 and round 1 write the same figure %s", Figure(0, 0))
	}
}
