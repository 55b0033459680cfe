package resources_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	qt "github.com/koord-queue/koord-queue/pkg/quota/quotatest"
	"github.com/koord-queue/koord-queue/pkg/resources"
)

func container(requests, limits corev1.ResourceList) corev1.Container {
	return corev1.Container{Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits}}
}

func strs(l corev1.ResourceList) map[string]string {
	out := map[string]string{}
	for n, q := range l {
		out[string(n)] = q.String()
	}
	return out
}

func TestPodRequests(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	sidecar := func(r corev1.ResourceList) corev1.Container {
		c := container(r, nil)
		c.RestartPolicy = &always
		return c
	}
	cases := []struct {
		name string
		spec corev1.PodSpec
		want map[string]string
	}{
		{
			name: "containers are summed",
			spec: corev1.PodSpec{Containers: []corev1.Container{
				container(qt.Res("cpu", "1", "memory", "1Gi"), nil), container(qt.Res("cpu", "500m"), nil)}},
			want: map[string]string{"cpu": "1500m", "memory": "1Gi"},
		},
		{
			name: "limits stand in for missing requests",
			spec: corev1.PodSpec{Containers: []corev1.Container{container(qt.Res("cpu", "1"), qt.Res("cpu", "2", "memory", "2Gi"))}},
			want: map[string]string{"cpu": "1", "memory": "2Gi"},
		},
		{
			name: "init containers count by their maximum",
			spec: corev1.PodSpec{
				InitContainers: []corev1.Container{container(qt.Res("cpu", "3"), nil), container(qt.Res("cpu", "1", "memory", "4Gi"), nil)},
				Containers:     []corev1.Container{container(qt.Res("cpu", "2", "memory", "1Gi"), nil)},
			},
			want: map[string]string{"cpu": "3", "memory": "4Gi"},
		},
		{
			name: "sidecars add to the containers and to the init containers after them",
			spec: corev1.PodSpec{
				InitContainers: []corev1.Container{sidecar(qt.Res("cpu", "1")), container(qt.Res("cpu", "3"), nil)},
				Containers:     []corev1.Container{container(qt.Res("cpu", "1"), nil)},
			},
			want: map[string]string{"cpu": "4"},
		},
		{
			name: "overhead is added",
			spec: corev1.PodSpec{Containers: []corev1.Container{container(qt.Res("cpu", "1"), nil)}, Overhead: qt.Res("cpu", "250m")},
			want: map[string]string{"cpu": "1250m"},
		},
		{
			name: "pod-level requests replace the containers' for cpu and memory",
			spec: corev1.PodSpec{
				Containers: []corev1.Container{container(qt.Res("cpu", "1", "nvidia.com/gpu", "1"), nil)},
				Resources:  &corev1.ResourceRequirements{Requests: qt.Res("cpu", "4")},
			},
			want: map[string]string{"cpu": "4", "nvidia.com/gpu": "1"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, strs(resources.PodRequests(&tc.spec))); diff != "" {
				t.Errorf("PodRequests (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPodSetsRequests(t *testing.T) {
	podSet := func(count int32, r corev1.ResourceList) schedulingv1alpha1.PodSet {
		return schedulingv1alpha1.PodSet{Name: "main", Count: count,
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{container(r, nil)}}}}
	}
	got := resources.PodSetsRequests([]schedulingv1alpha1.PodSet{
		podSet(4, qt.Res("cpu", "500m", "memory", "1Gi")),
		podSet(1, qt.Res("cpu", "2")),
		podSet(0, qt.Res("cpu", "100")),
	})
	want := map[string]string{"cpu": "4", "memory": "4Gi"}
	if diff := cmp.Diff(want, strs(got)); diff != "" {
		t.Errorf("PodSetsRequests (-want +got):\n%s", diff)
	}
}

// TestMultiplyIsExact: count times request is exact however large, so that
// what cannot be counted is refused, not wrapped around an int64.
func TestMultiplyIsExact(t *testing.T) {
	cases := []struct {
		q    string
		n    int64
		want string
	}{
		{"500m", 3, "1500m"},
		{"1Gi", 4, "4Gi"},
		{"9223372036", 2000000000, "18446744072000000000"},
		{"1e40", 3, "3e40"},
		{"0", 5, "0"},
	}
	for _, tc := range cases {
		got := resources.Multiply(resource.MustParse(tc.q), tc.n)
		if want := resource.MustParse(tc.want); got.Cmp(want) != 0 {
			t.Errorf("Multiply(%s, %d) = %s, want %s", tc.q, tc.n, got.String(), tc.want)
		}
	}
}

// TestPodsRequests: fewer pods ask for exactly their share, however the
// amounts are written, so a decision and a charge rebuilt from a unit's
// admissions agree.
func TestPodsRequests(t *testing.T) {
	cases := []struct {
		name        string
		podRequests []corev1.ResourceList
		pods        []int32
		want        map[string]string
	}{
		{
			name:        "each set's pods times its pod's request, added up",
			podRequests: []corev1.ResourceList{qt.Res("cpu", "500m", "memory", "1Gi"), qt.Res("cpu", "2")},
			pods:        []int32{3, 2},
			want:        map[string]string{"cpu": "5500m", "memory": "3Gi"},
		},
		{
			name:        "a set of no pods asks for nothing",
			podRequests: []corev1.ResourceList{qt.Res("cpu", "1"), qt.Res("nvidia.com/gpu", "1")},
			pods:        []int32{2, 0},
			want:        map[string]string{"cpu": "2"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, strs(resources.PodsRequests(tc.podRequests, tc.pods))); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestEqual(t *testing.T) {
	cases := []struct {
		name string
		a, b corev1.ResourceList
		want bool
	}{
		{name: "the same amounts written differently", a: qt.Res("cpu", "1", "memory", "1Gi"), b: qt.Res("cpu", "1000m", "memory", "1024Mi"), want: true},
		{name: "a zero left out", a: qt.Res("cpu", "1", "nvidia.com/gpu", "0"), b: qt.Res("cpu", "1"), want: true},
		{name: "a different amount", a: qt.Res("cpu", "1"), b: qt.Res("cpu", "2")},
		{name: "a resource the other lacks", a: qt.Res("cpu", "1"), b: qt.Res("cpu", "1", "memory", "1Gi")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := resources.Equal(tc.a, tc.b); got != tc.want {
				t.Errorf("Equal(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.want)
			}
		})
	}
}

func TestCheckPodSpec(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	named := func(name string, requests, limits corev1.ResourceList) corev1.Container {
		c := container(requests, limits)
		c.Name = name
		return c
	}
	cases := map[string]struct {
		spec    corev1.PodSpec
		wantErr string // empty: accepted
	}{
		"positive and zero amounts are fine": {
			spec: corev1.PodSpec{Containers: []corev1.Container{named("a", qt.Res("cpu", "4", "memory", "0"), qt.Res("cpu", "8"))}},
		},
		"a negative request of a container": {
			spec: corev1.PodSpec{Containers: []corev1.Container{
				named("a", qt.Res("cpu", "4"), nil), named("master", qt.Res("cpu", "-8"), nil)}},
			wantErr: `containers[1] (master): resources.requests[cpu] is -8: a resource amount must not be negative`,
		},
		"a negative limit, though a request is set": {
			spec:    corev1.PodSpec{Containers: []corev1.Container{named("a", qt.Res("memory", "1Gi"), qt.Res("memory", "-1Gi"))}},
			wantErr: `containers[0] (a): resources.limits[memory] is -1Gi`,
		},
		"a negative init container": {
			spec: corev1.PodSpec{
				InitContainers: []corev1.Container{named("init", qt.Res("cpu", "-500m"), nil)},
				Containers:     []corev1.Container{named("a", qt.Res("cpu", "1"), nil)},
			},
			wantErr: `initContainers[0] (init): resources.requests[cpu] is -500m`,
		},
		"a negative sidecar": {
			spec: corev1.PodSpec{
				InitContainers: []corev1.Container{func() corev1.Container {
					c := named("proxy", nil, qt.Res("nvidia.com/gpu", "-1"))
					c.RestartPolicy = &always
					return c
				}()},
			},
			wantErr: `initContainers[0] (proxy): resources.limits[nvidia.com/gpu] is -1`,
		},
		"a negative overhead": {
			spec: corev1.PodSpec{
				Containers: []corev1.Container{named("a", qt.Res("cpu", "1"), nil)},
				Overhead:   qt.Res("cpu", "-2"),
			},
			wantErr: `overhead[cpu] is -2`,
		},
		"a negative pod-level request": {
			spec: corev1.PodSpec{
				Containers: []corev1.Container{named("a", qt.Res("cpu", "1"), nil)},
				Resources:  &corev1.ResourceRequirements{Requests: qt.Res("memory", "-4Gi")},
			},
			wantErr: `resources.requests[memory] is -4Gi`,
		},
		"a negative pod-level limit of a resource not counted at pod level": {
			spec: corev1.PodSpec{
				Containers: []corev1.Container{named("a", qt.Res("cpu", "1"), nil)},
				Resources:  &corev1.ResourceRequirements{Limits: qt.Res("example.com/foo", "-1")},
			},
			wantErr: `resources.limits[example.com/foo] is -1`,
		},
		"of several, the first in the spec's order, resources by name": {
			spec:    corev1.PodSpec{Containers: []corev1.Container{named("a", qt.Res("memory", "-1", "cpu", "-1"), nil)}},
			wantErr: `containers[0] (a): resources.requests[cpu] is -1`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := resources.CheckPodSpec(&tc.spec)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("CheckPodSpec = %v, want nil", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, resources.ErrNegative)):
				t.Errorf("CheckPodSpec = %v, want ErrNegative saying %q", err, tc.wantErr)
			}
		})
	}
}

func TestCheckList(t *testing.T) {
	if err := resources.CheckList("spec.resource", qt.Res("cpu", "4", "memory", "0")); err != nil {
		t.Errorf("CheckList of a positive list = %v, want nil", err)
	}
	err := resources.CheckList("spec.resource", qt.Res("cpu", "4", "memory", "-500"))
	want := "spec.resource[memory] is -500: a resource amount must not be negative"
	if err == nil || err.Error() != want || !errors.Is(err, resources.ErrNegative) {
		t.Errorf("CheckList = %v, want ErrNegative saying %q", err, want)
	}
}
