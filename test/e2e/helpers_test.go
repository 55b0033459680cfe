package e2e

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/koord-queue/koord-queue/pkg/visibility"
	"github.com/koord-queue/koord-queue/pkg/visibility/api"
)

func create(t *testing.T, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := k8sClient.Create(context.Background(), o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
		t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), o) })
	}
}

func namespaceObj(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

// unitView asks koord-queue's visibility API where a unit is and why.
func unitView(ctx context.Context, ns, name string) (api.UnitView, error) {
	return (&visibility.Client{BaseURL: visibilityURL, HTTP: visibilityHTTP, Token: visibilityToken}).QueueUnit(ctx, ns, name)
}

func isAlreadyExists(err error) bool { return apierrors.IsAlreadyExists(err) }
