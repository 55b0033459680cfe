package admission

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	quotav1alpha1 "github.com/koord-queue/koord-queue/apis/quota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/test/testenv"
)

// TestTreeCapacityFromAProfile: with --compute-tree-capacity, a quota
// tree's root with no total-resource annotation (no koord-manager) gets its
// capacity from its ElasticQuotaProfile and the nodes it chooses: its unit
// waits while the pool has no node and is admitted once one joins.
func TestTreeCapacityFromAProfile(t *testing.T) {
	opts := fastOptions()
	opts.Admission.ComputeTreeCapacity = true
	cache := startKoordQueue(t, opts)
	ns := namespace(t)
	root, team := ns+"-pool", ns+"-team"
	create(t,
		wrappers.MakeElasticQuota(root, ns).IsParent().
			Label(elasticquotav1alpha1.LabelQuotaTreeID, ns).Label(elasticquotav1alpha1.LabelQuotaIsRoot, "true").Obj(),
		wrappers.MakeElasticQuota(team, ns).Parent(root).
			Label(elasticquotav1alpha1.LabelQuotaTreeID, ns).Max(corev1.ResourceCPU, "100").Obj(),
		&quotav1alpha1.ElasticQuotaProfile{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pool"},
			Spec: quotav1alpha1.ElasticQuotaProfileSpec{QuotaName: root,
				NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pool": ns}}},
		},
		wrappers.MakeQueueUnit("u", ns).Quota(team).Request(corev1.ResourceCPU, "6").Obj())
	waitUnit(t, ns, "u", func(u *schedulingv1alpha1.QueueUnit) error {
		if u.Status.Message == "" {
			return fmt.Errorf("phase %s, no message yet", u.EffectivePhase())
		}
		return nil
	})
	staysEnqueued(t, ns, "u")

	node := wrappers.Node(ns, "8", "64Gi")
	node.Labels = map[string]string{"pool": ns}
	status := node.Status
	create(t, node)
	node.Status = status
	if err := env.Client.Status().Update(context.Background(), node); err != nil {
		t.Fatal(err)
	}
	waitPhase(t, ns, "u", schedulingv1alpha1.Dequeued)
	testenv.Eventually(t, testenv.DefaultTimeout, func(context.Context) error {
		v, ok := cache.Quota(root)
		if !ok {
			return fmt.Errorf("quota %s not in the visibility API", root)
		}
		if got := v.Capacity.Cpu().String(); got != "8" || v.Error != "" {
			return fmt.Errorf("quota %s: capacity %s cpu (error %q), want 8", root, got, v.Error)
		}
		return nil
	})
}

// TestPoolNodeBeingDeletedCountsNothing: with --compute-tree-capacity, a
// pool's node whose deletion a finalizer holds stays in the API server with
// a deletion timestamp, and its pool's tree no longer counts it.
func TestPoolNodeBeingDeletedCountsNothing(t *testing.T) {
	opts := fastOptions()
	opts.Admission.ComputeTreeCapacity = true
	cache := startKoordQueue(t, opts)
	ns := namespace(t)
	root := ns + "-pool"
	create(t,
		wrappers.MakeElasticQuota(root, ns).IsParent().
			Label(elasticquotav1alpha1.LabelQuotaTreeID, ns).Label(elasticquotav1alpha1.LabelQuotaIsRoot, "true").Obj(),
		&quotav1alpha1.ElasticQuotaProfile{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pool"},
			Spec: quotav1alpha1.ElasticQuotaProfileSpec{QuotaName: root,
				NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pool": ns}}},
		})
	const finalizer = "koord-queue.test/keep"
	var leaving *corev1.Node
	for _, name := range []string{ns + "-stays", ns + "-leaves"} {
		node := wrappers.Node(name, "4", "16Gi")
		node.Labels = map[string]string{"pool": ns}
		if name == ns+"-leaves" {
			node.Finalizers = []string{finalizer}
			leaving = node
		}
		status := node.Status
		create(t, node)
		node.Status = status
		if err := env.Client.Status().Update(context.Background(), node); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		n := &corev1.Node{}
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(leaving), n); err == nil {
			n.Finalizers = nil
			_ = env.Client.Update(context.Background(), n)
		}
	})
	capacity := func(want string) {
		t.Helper()
		testenv.Eventually(t, testenv.DefaultTimeout, func(context.Context) error {
			v, ok := cache.Quota(root)
			if !ok {
				return fmt.Errorf("quota %s not in the visibility API", root)
			}
			if got := v.Capacity.Cpu().String(); got != want || v.Error != "" {
				return fmt.Errorf("quota %s: capacity %s cpu (error %q), want %s", root, got, v.Error, want)
			}
			return nil
		})
	}
	capacity("8")

	if err := env.Client.Delete(context.Background(), leaving); err != nil {
		t.Fatal(err)
	}
	n := &corev1.Node{}
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(leaving), n); err != nil || n.DeletionTimestamp == nil {
		t.Fatalf("node %s: want it kept with a deletion timestamp, got %v (error %v)", leaving.Name, n.DeletionTimestamp, err)
	}
	capacity("4")
}
