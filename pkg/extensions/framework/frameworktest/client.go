package frameworktest

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
)

// ClientBuilder starts a fake client for a JobReconciler, with the field
// indexes framework.SetupIndexes registers in production (but that of an
// integration with PodOwners), and pods and PriorityClasses added to
// scheme, since the reconciler counts a job's pods and reads the global
// default PriorityClass.
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
		WithIndex(&corev1.Pod{}, framework.IndexPodOwner, framework.PodOwnerIndex)
}
