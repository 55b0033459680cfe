package admission

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/koord-queue/koord-queue/pkg/admission"
	"github.com/koord-queue/koord-queue/pkg/streamedlists"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/test/testenv"
)

// TestPodsReachTheBooks: koord-queue's pod feed reads the pods of a real
// API server into its books, streamed (as the binary does, on API servers
// that serve it) or listed: it syncs, and what pods no unit claims hold on
// nodes is charged to the quota their label names, until they are gone.
func TestPodsReachTheBooks(t *testing.T) {
	previous := streamedlists.Enabled()
	t.Cleanup(func() { streamedlists.Apply(previous) })
	for _, stream := range []bool{true, false} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			streamedlists.Apply(stream)
			ns := namespace(t)
			quota := ns + "-pods"
			for i := range 3 {
				create(t, wrappers.MakePod(fmt.Sprintf("bare-%d", i), ns).Quota(quota).Requests("cpu", "1").Node("n1").Obj())
			}
			c := admission.NewCache()
			c.UpsertElasticQuota(wrappers.MakeElasticQuota(quota, ns).Max(corev1.ResourceCPU, "10").Obj())
			feed, err := admission.NewPodFeed(env.Config, c)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			go func() { _ = feed.Start(ctx) }()
			used := func(want string) func(context.Context) error {
				return func(context.Context) error {
					v, _ := c.Quota(quota)
					if got := v.Used[corev1.ResourceCPU]; !feed.HasSynced() || got.String() != want {
						return fmt.Errorf("synced: %v, quota %s used %s cpu, want %s", feed.HasSynced(), quota, got.String(), want)
					}
					return nil
				}
			}
			testenv.Eventually(t, 30*time.Second, used("3"))
			create(t, wrappers.MakePod("late", ns).Quota(quota).Requests("cpu", "2").Node("n1").Obj())
			testenv.Eventually(t, 30*time.Second, used("5"))
		})
	}
}
