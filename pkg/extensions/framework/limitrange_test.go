package framework

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	qt "github.com/koord-queue/koord-queue/pkg/quota/quotatest"
	"github.com/koord-queue/koord-queue/pkg/resources"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
)

func TestLimitRangeDefaults(t *testing.T) {
	res := qt.Res
	withRequests := func(name string, pairs ...string) corev1.Container {
		return corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Requests: res(pairs...)}}
	}
	withLimits := func(name string, pairs ...string) corev1.Container {
		return corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Limits: res(pairs...)}}
	}
	sidecar := func(c corev1.Container) corev1.Container {
		c.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
		return c
	}
	lr := func(name string) *wrappers.LimitRangeWrapper { return wrappers.MakeLimitRange(name, "ns") }
	cases := map[string]struct {
		ranges []*corev1.LimitRange
		spec   corev1.PodSpec
		want   corev1.ResourceList
	}{
		"no LimitRange: what the containers say": {
			spec: corev1.PodSpec{Containers: []corev1.Container{withRequests("main", "cpu", "1")}},
			want: res("cpu", "1"),
		},
		"a container that requests nothing gets the default request": {
			ranges: []*corev1.LimitRange{lr("defaults").Container(nil, res("cpu", "500m", "memory", "256Mi")).Obj()},
			spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "main"}, withRequests("log", "cpu", "100m")}},
			want:   res("cpu", "600m", "memory", "512Mi"),
		},
		"the default limit is the request when there is no default request": {
			ranges: []*corev1.LimitRange{lr("defaults").Container(res("cpu", "2"), nil).Obj()},
			spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "main"}}},
			want:   res("cpu", "2"),
		},
		"the default request wins over the default limit": {
			ranges: []*corev1.LimitRange{lr("defaults").Container(res("cpu", "2"), res("cpu", "250m")).Obj()},
			spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "main"}}},
			want:   res("cpu", "250m"),
		},
		"a container's own limit is its request, not the default request": {
			ranges: []*corev1.LimitRange{lr("defaults").Container(res("cpu", "2"), res("cpu", "250m", "memory", "1Gi")).Obj()},
			spec:   corev1.PodSpec{Containers: []corev1.Container{withLimits("main", "cpu", "4")}},
			want:   res("cpu", "4", "memory", "1Gi"),
		},
		"init containers get defaults too: the largest sets the pod's request": {
			ranges: []*corev1.LimitRange{lr("defaults").Container(nil, res("memory", "2Gi")).Obj()},
			spec: corev1.PodSpec{
				InitContainers: []corev1.Container{withRequests("fetch", "cpu", "3")},
				Containers:     []corev1.Container{withRequests("main", "cpu", "1", "memory", "1Gi")},
			},
			want: res("cpu", "3", "memory", "2Gi"),
		},
		"a sidecar gets defaults and adds them to the pod": {
			ranges: []*corev1.LimitRange{lr("defaults").Container(nil, res("cpu", "200m")).Obj()},
			spec: corev1.PodSpec{
				InitContainers: []corev1.Container{sidecar(corev1.Container{Name: "mesh"})},
				Containers:     []corev1.Container{withRequests("main", "cpu", "1")},
			},
			want: res("cpu", "1200m"),
		},
		"max stands in for the default limit, min for the default request": {
			ranges: []*corev1.LimitRange{
				lr("a").Item(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Max: res("cpu", "4")}).Obj(),
				lr("b").Item(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Min: res("memory", "128Mi")}).Obj(),
			},
			spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main"}}},
			want: res("cpu", "4", "memory", "128Mi"),
		},
		"the first LimitRange by name gives a resource; a later one what it does not": {
			ranges: []*corev1.LimitRange{
				lr("zz").Container(nil, res("cpu", "3", "memory", "3Gi")).Obj(),
				lr("aa").Container(nil, res("cpu", "1")).Obj(),
			},
			spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main"}}},
			want: res("cpu", "1", "memory", "3Gi"),
		},
		"items of type Pod give no defaults": {
			ranges: []*corev1.LimitRange{lr("pods").Item(corev1.LimitRangeItem{Type: corev1.LimitTypePod, Max: res("cpu", "8"), Min: res("cpu", "1")}).Obj()},
			spec:   corev1.PodSpec{Containers: []corev1.Container{withRequests("main", "memory", "1Gi")}},
			want:   res("memory", "1Gi"),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ranges := make([]corev1.LimitRange, len(tc.ranges))
			for i, r := range tc.ranges {
				ranges[i] = *r
			}
			before := tc.spec.DeepCopy()
			sets, err := unitPodSets([]PodSet{{Name: "main", Count: 2, Template: &corev1.PodTemplateSpec{Spec: tc.spec}}}, podCreation{containers: limitRangeDefaults(ranges)})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(before, &tc.spec); diff != "" {
				t.Errorf("the job's template changed (-before +after):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, resources.PodRequests(&sets[0].Template.Spec)); diff != "" {
				t.Errorf("the unit's pod request (-want +got):\n%s", diff)
			}
		})
	}
}
