// Package apis gathers the API groups koord-queue serves and reads.
package apis

import (
	"k8s.io/apimachinery/pkg/runtime"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	quotav1alpha1 "github.com/koord-queue/koord-queue/apis/quota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
)

// AddToScheme adds Queue, QueueUnit, ElasticQuota and ElasticQuotaProfile
// to a scheme.
func AddToScheme(s *runtime.Scheme) error {
	if err := schedulingv1alpha1.AddToScheme(s); err != nil {
		return err
	}
	if err := elasticquotav1alpha1.AddToScheme(s); err != nil {
		return err
	}
	return quotav1alpha1.AddToScheme(s)
}
