// Package extensionstest has fluent builders for the jobs of every framework
// the extensions support, and for QueueUnits, so that a test shows only what
// matters to it:
//
//	extensionstest.MakeJob("train", "ns").Quota("team-a").Parallelism(2).Request("cpu", "1").Obj()
//	extensionstest.MakeTFJob("tf", "ns").Quota("team-a").Replica("Worker", 2, "cpu", "1").Obj()
package extensionstest

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
)

// Resources builds a ResourceList from name, quantity pairs.
func Resources(pairs ...string) corev1.ResourceList {
	if len(pairs)%2 != 0 {
		panic(fmt.Sprintf("Resources: odd number of arguments %q", pairs))
	}
	out := corev1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		out[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return out
}

// PodTemplate is a template of one container requesting name, quantity
// pairs.
func PodTemplate(requests ...string) corev1.PodTemplateSpec {
	c := corev1.Container{Name: "main", Image: "busybox"}
	if len(requests) > 0 {
		c.Resources.Requests = Resources(requests...)
	}
	return corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		Containers:    []corev1.Container{c},
	}}
}

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
