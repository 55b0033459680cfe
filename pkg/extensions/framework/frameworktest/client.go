package frameworktest

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
)

// ClientBuilder starts a fake client for a JobReconciler, with the field
// indexes framework.SetupIndexes registers in production (but that of an
// integration with PodOwners), and pods and PriorityClasses added to
// scheme, since the reconciler counts a job's pods and reads the global
// default PriorityClass. Each object created gets a UID, as the API server
// gives it and the fake client does not: a release writes its unit's UID on
// its job, and the pod gate reads it back.
func ClientBuilder(t testing.TB, scheme *runtime.Scheme) *fake.ClientBuilder {
	t.Helper()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := schedulingv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(scheme).
		WithIndex(&elasticquotav1alpha1.ElasticQuota{}, framework.IndexQuotaNamespaces, framework.QuotaNamespacesIndex).
		WithIndex(&elasticquotav1alpha1.ElasticQuota{}, framework.IndexQuotaName, framework.QuotaNameIndex).
		WithIndex(&corev1.Pod{}, framework.IndexPodOwner, framework.PodOwnerIndex).
		WithInterceptorFuncs(interceptor.Funcs{Create: createWithUID})
}

// createWithUID creates obj with a UID made from its kind and name, unless
// it has one.
func createWithUID(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
	if obj.GetUID() == "" {
		kind := obj.GetObjectKind().GroupVersionKind().Kind
		if gvk, err := apiutil.GVKForObject(obj, c.Scheme()); err == nil {
			kind = gvk.Kind
		}
		obj.SetUID(types.UID("uid-" + kind + "-" + obj.GetNamespace() + "-" + obj.GetName()))
	}
	return c.Create(ctx, obj, opts...)
}

// WithJobIndexes registers on b the index framework.SetupIndexes
// registers for the jobs of integs and those their frameworks make
// (framework.IndexJobController), for a reconciler of one of integs.
func WithJobIndexes(b *fake.ClientBuilder, integs ...framework.Integration) *fake.ClientBuilder {
	for _, obj := range framework.ControllerIndexed(integs...) {
		b = b.WithIndex(obj, framework.IndexJobController, framework.PodOwnerIndex)
	}
	return b
}
