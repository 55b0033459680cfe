package admission

import (
	corev1 "k8s.io/api/core/v1"

	quotav1alpha1 "github.com/koord-queue/koord-queue/apis/quota/v1alpha1"
)

// The Cache's answers that one of its parts gives: each asks that part.

// WritingAdmissions reports whether admissions decided wait for their
// write (decisions.WritingAdmissions).
func (c *Cache) WritingAdmissions() bool { return c.decisions.WritingAdmissions() }

// UpsertPod records a pod as the API server has it (podCharges.UpsertPod).
func (c *Cache) UpsertPod(p *corev1.Pod) { c.podCharges.UpsertPod(p) }

// DeletePod forgets a pod: it is gone (podCharges.DeletePod).
func (c *Cache) DeletePod(namespace, name string) { c.podCharges.DeletePod(namespace, name) }

// ReplacePods makes the Cache's pods these and no other, a relist
// (podCharges.ReplacePods).
func (c *Cache) ReplacePods(pods []*corev1.Pod) { c.podCharges.ReplacePods(pods) }

// UpsertElasticQuotaProfile records a profile and recomputes the trees'
// capacities (treeCapacities.UpsertElasticQuotaProfile).
func (c *Cache) UpsertElasticQuotaProfile(p *quotav1alpha1.ElasticQuotaProfile) {
	c.treeCapacities.UpsertElasticQuotaProfile(p)
}

// DeleteElasticQuotaProfile forgets a profile
// (treeCapacities.DeleteElasticQuotaProfile).
func (c *Cache) DeleteElasticQuotaProfile(namespace, name string) {
	c.treeCapacities.DeleteElasticQuotaProfile(namespace, name)
}
