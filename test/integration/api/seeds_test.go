package api

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/test/seeds"
)

// TestSeedManifestsApplyUnchanged creates every seed manifest of a kind that
// koord-queue serves or reads, as written, and reads it back: the API server
// must keep every field the user wrote.
func TestSeedManifestsApplyUnchanged(t *testing.T) {
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: schedulingv1alpha1.QueueNamespace}}
	if err := env.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	ours := map[string]bool{
		schedulingv1alpha1.GroupVersion.String():   true,
		elasticquotav1alpha1.GroupVersion.String(): true,
	}
	files, err := seeds.Files()
	if err != nil {
		t.Fatal(err)
	}
	applied := 0
	for _, file := range files {
		objs, err := seeds.Objects(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, obj := range objs {
			if !ours[obj.GetAPIVersion()] {
				continue
			}
			t.Run(file+"/"+obj.GetName(), func(t *testing.T) {
				if obj.GetNamespace() == "" {
					obj.SetNamespace(metav1.NamespaceDefault) // as kubectl apply does
				}
				want := obj.DeepCopy()
				if err := env.Client.Create(ctx, obj); err != nil {
					t.Fatalf("creating %s %s: %v", obj.GetKind(), obj.GetName(), err)
				}
				t.Cleanup(func() { _ = env.Client.Delete(ctx, obj) })
				got := &unstructured.Unstructured{}
				got.SetGroupVersionKind(obj.GroupVersionKind())
				if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want.Object["spec"], got.Object["spec"]); diff != "" {
					t.Errorf("spec read back (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(want.GetLabels(), got.GetLabels()); diff != "" {
					t.Errorf("labels read back (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(want.GetAnnotations(), got.GetAnnotations()); diff != "" {
					t.Errorf("annotations read back (-want +got):\n%s", diff)
				}
			})
			applied++
		}
	}
	if applied < 7 {
		t.Errorf("applied %d seed objects of koord-queue's kinds, want at least 7", applied)
	}
}

// TestElasticQuotaTyped reads the seed 004 ElasticQuota through the typed
// client: the group is scheduling.sigs.k8s.io, as in Koordinator.
func TestElasticQuotaTyped(t *testing.T) {
	ctx := context.Background()
	objs, err := seeds.Objects("004-elastic-quota.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, objs[0]); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, objs[0]) })
	eq := &elasticquotav1alpha1.ElasticQuota{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "team-a"}, eq); err != nil {
		t.Fatal(err)
	}
	if got, want := eq.Spec.Max.Cpu().String(), "4"; got != want {
		t.Errorf("max cpu = %s, want %s", got, want)
	}
	if got, want := eq.Spec.Min.Memory().String(), "8Gi"; got != want {
		t.Errorf("min memory = %s, want %s", got, want)
	}
	if got := eq.Labels[elasticquotav1alpha1.LabelQuotaParent]; got != "" {
		t.Errorf("parent label = %q, want empty (the root)", got)
	}
}
