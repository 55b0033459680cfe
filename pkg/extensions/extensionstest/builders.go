// Package extensionstest has fluent builders for the jobs of every framework
// the extensions support, so that a test shows only what matters to it:
//
//	extensionstest.MakeJob("train", "ns").Quota("team-a").Parallelism(2).Request("cpu", "1").Obj()
//	extensionstest.MakeTFJob("tf", "ns").Quota("team-a").Replica("Worker", 2, "cpu", "1").Obj()
//
// QueueUnits and the pod templates the jobs are made of are built by
// pkg/testing/wrappers, resource lists by quotatest.Res.
package extensionstest

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
)

// meta is the ObjectMeta every builder starts from.
func meta(name, namespace string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: namespace}
}

func setLabel(m *metav1.ObjectMeta, key, value string) {
	if m.Labels == nil {
		m.Labels = map[string]string{}
	}
	m.Labels[key] = value
}

func setAnnotation(m *metav1.ObjectMeta, key, value string) {
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[key] = value
}

func quotaLabel(m *metav1.ObjectMeta, quota string) {
	setLabel(m, elasticquotav1alpha1.LabelQuotaName, quota)
}
