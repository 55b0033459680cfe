package framework

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	qt "github.com/koord-queue/koord-queue/pkg/quota/quotatest"
	"github.com/koord-queue/koord-queue/pkg/resources"
)

// TestRuntimeClassOverhead: a pod set whose template names a RuntimeClass
// asks for the class's overhead beside its containers, as the API server
// gives it to the pods.
func TestRuntimeClassOverhead(t *testing.T) {
	res := qt.Res
	scheme := runtime.NewScheme()
	if err := nodev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	class := func(name string, overhead corev1.ResourceList) client.Object {
		rc := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Handler: "runsc"}
		if overhead != nil {
			rc.Overhead = &nodev1.Overhead{PodFixed: overhead}
		}
		return rc
	}
	classes := []client.Object{class("gvisor", res("cpu", "250m", "memory", "120Mi")), class("plain", nil)}
	cases := map[string]struct {
		runtimeClass *string
		overhead     corev1.ResourceList
		want         corev1.ResourceList
	}{
		"no RuntimeClass: what the containers ask": {
			want: res("cpu", "1"),
		},
		"a class with an overhead adds it": {
			runtimeClass: ptr.To("gvisor"),
			want:         res("cpu", "1250m", "memory", "120Mi"),
		},
		"a class without an overhead adds nothing": {
			runtimeClass: ptr.To("plain"),
			want:         res("cpu", "1"),
		},
		"a class that does not exist adds nothing": {
			runtimeClass: ptr.To("missing"),
			want:         res("cpu", "1"),
		},
		"a template's own overhead is kept": {
			runtimeClass: ptr.To("gvisor"),
			overhead:     res("cpu", "500m"),
			want:         res("cpu", "1500m"),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(classes...).Build()
			spec := corev1.PodSpec{
				RuntimeClassName: tc.runtimeClass,
				Overhead:         tc.overhead,
				Containers:       []corev1.Container{{Name: "main", Resources: corev1.ResourceRequirements{Requests: res("cpu", "1")}}},
			}
			sets := []PodSet{{Name: "main", Count: 2, Template: &corev1.PodTemplateSpec{Spec: spec}}}
			overheads, err := runtimeOverheads(context.Background(), c, sets)
			if err != nil {
				t.Fatal(err)
			}
			unitSets, err := unitPodSets(sets, podCreation{overheads: overheads})
			if err != nil {
				t.Fatal(err)
			}
			got := resources.PodRequests(&unitSets[0].Template.Spec)
			if diff := cmp.Diff(resources.Describe(tc.want), resources.Describe(got)); diff != "" {
				t.Errorf("each pod asks for (-want +got):\n%s", diff)
			}
			if sets[0].Template.Spec.Overhead != nil && tc.overhead == nil {
				t.Errorf("the job's own template was given an overhead: %v", sets[0].Template.Spec.Overhead)
			}
		})
	}
}
