package api

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
)

func podSet(name string, count int32) schedulingv1alpha1.PodSet {
	return schedulingv1alpha1.PodSet{
		Name:  name,
		Count: count,
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
		}},
	}
}

func validUnit(name string) *schedulingv1alpha1.QueueUnit {
	return &schedulingv1alpha1.QueueUnit{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault},
		Spec: schedulingv1alpha1.QueueUnitSpec{
			Priority: ptr.To[int32](10),
			Resource: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")},
			Request:  corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")},
			PodSets:  []schedulingv1alpha1.PodSet{podSet("main", 2)},
		},
	}
}

func TestQueueUnitValidation(t *testing.T) {
	cases := map[string]struct {
		mutate  func(*schedulingv1alpha1.QueueUnit)
		wantErr string // empty: accepted
	}{
		"a valid unit is accepted": {
			mutate: func(*schedulingv1alpha1.QueueUnit) {},
		},
		"a unit without pod sets is accepted (seed 004's priority example has none)": {
			mutate: func(u *schedulingv1alpha1.QueueUnit) { u.Spec.PodSets = nil },
		},
		"eight pod sets are accepted": {
			mutate: func(u *schedulingv1alpha1.QueueUnit) {
				u.Spec.PodSets = nil
				for i := range 8 {
					u.Spec.PodSets = append(u.Spec.PodSets, podSet(fmt.Sprintf("set-%d", i), 1))
				}
			},
		},
		"more than eight pod sets are rejected": {
			mutate: func(u *schedulingv1alpha1.QueueUnit) {
				u.Spec.PodSets = nil
				for i := range 9 {
					u.Spec.PodSets = append(u.Spec.PodSets, podSet(fmt.Sprintf("set-%d", i), 1))
				}
			},
			wantErr: "spec.podSet: Too many: 9: must have at most 8 items",
		},
		"duplicate pod-set names are rejected": {
			mutate: func(u *schedulingv1alpha1.QueueUnit) {
				u.Spec.PodSets = []schedulingv1alpha1.PodSet{podSet("worker", 1), podSet("worker", 2)}
			},
			wantErr: `spec.podSet[1]: Duplicate value: {"name":"worker"}`,
		},
		"a negative count is rejected": {
			mutate:  func(u *schedulingv1alpha1.QueueUnit) { u.Spec.PodSets[0].Count = -1 },
			wantErr: "spec.podSet[0].count: Invalid value: -1: spec.podSet[0].count in body should be greater than or equal to 0",
		},
		"minCount above count is rejected": {
			mutate:  func(u *schedulingv1alpha1.QueueUnit) { u.Spec.PodSets[0].MinCount = ptr.To[int32](3) },
			wantErr: "spec.podSet[0]: Invalid value: \"object\": minCount must not exceed count",
		},
		"minCount equal to count is accepted": {
			mutate: func(u *schedulingv1alpha1.QueueUnit) { u.Spec.PodSets[0].MinCount = ptr.To[int32](2) },
		},
		"a negative resource quantity is rejected": {
			mutate: func(u *schedulingv1alpha1.QueueUnit) {
				u.Spec.Resource[corev1.ResourceMemory] = resource.MustParse("-1Gi")
			},
			wantErr: "spec.resource: Invalid value: \"object\": resource quantities must not be negative",
		},
		"a negative request quantity is rejected": {
			mutate: func(u *schedulingv1alpha1.QueueUnit) {
				u.Spec.Request[corev1.ResourceCPU] = resource.MustParse("-500m")
			},
			wantErr: "spec.request: Invalid value: \"object\": request quantities must not be negative",
		},
		"a negative request in a pod set's container is rejected, naming the field": {
			mutate: func(u *schedulingv1alpha1.QueueUnit) {
				u.Spec.PodSets[0].Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("-8")}
			},
			wantErr: `spec.podSet[0].template.spec.containers[0].resources.requests.cpu: Invalid value: "-8"`,
		},
		"a negative limit in a pod set's init container is rejected": {
			mutate: func(u *schedulingv1alpha1.QueueUnit) {
				u.Spec.PodSets[0].Template.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox",
					Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("-1Gi")}}}}
			},
			wantErr: `spec.podSet[0].template.spec.initContainers[0].resources.limits.memory: Invalid value: "-1Gi"`,
		},
		"a negative pod overhead is rejected": {
			mutate: func(u *schedulingv1alpha1.QueueUnit) {
				u.Spec.PodSets[0].Template.Spec.Overhead = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("-500m")}
			},
			wantErr: `spec.podSet[0].template.spec.overhead.cpu: Invalid value: "-500m"`,
		},
		"a negative pod-level request is rejected": {
			mutate: func(u *schedulingv1alpha1.QueueUnit) {
				u.Spec.PodSets[0].Template.Spec.Resources = &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("-1")}}
			},
			wantErr: `spec.podSet[0].template.spec.resources.requests.cpu: Invalid value: "-1"`,
		},
		"positive amounts, a plus sign and a negative exponent in a template are accepted": {
			mutate: func(u *schedulingv1alpha1.QueueUnit) {
				u.Spec.PodSets[0].Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("+2"), corev1.ResourceMemory: resource.MustParse("1e-3"), "nvidia.com/gpu": resource.MustParse("0")}
			},
		},
		"a pod-set name that is not a DNS label is rejected": {
			mutate:  func(u *schedulingv1alpha1.QueueUnit) { u.Spec.PodSets[0].Name = "Main_Set" },
			wantErr: "spec.podSet[0].name: Invalid value: \"Main_Set\"",
		},
	}
	i := 0
	for name, tc := range cases {
		i++
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			unit := validUnit(fmt.Sprintf("unit-%d", i))
			tc.mutate(unit)
			err := env.Client.Create(ctx, unit)
			checkErr(t, err, tc.wantErr)
			if err == nil {
				t.Cleanup(func() { _ = env.Client.Delete(ctx, unit) })
			}
		})
	}
}

// TestQueueUnitNegativeNumbers: a quantity written as a JSON number, which
// no Go client sends but kubectl does for "cpu: -500", is refused too,
// wherever a unit carries one.
func TestQueueUnitNegativeNumbers(t *testing.T) {
	ctx := context.Background()
	container := func(requests map[string]any) map[string]any {
		return map[string]any{"name": "c", "image": "busybox", "resources": map[string]any{"requests": requests}}
	}
	cases := map[string]struct {
		spec    map[string]any
		wantErr string
	}{
		"spec.resource": {
			spec:    map[string]any{"resource": map[string]any{"cpu": int64(-500)}},
			wantErr: "spec.resource.cpu: Invalid value: -500",
		},
		"spec.request": {
			spec:    map[string]any{"request": map[string]any{"memory": int64(-1)}},
			wantErr: "spec.request.memory: Invalid value: -1",
		},
		"a pod set's container": {
			spec: map[string]any{"podSet": []any{map[string]any{"name": "main",
				"template": map[string]any{"spec": map[string]any{"containers": []any{container(map[string]any{"cpu": int64(-8)})}}}}}},
			wantErr: "spec.podSet[0].template.spec.containers[0].resources.requests.cpu: Invalid value: -8",
		},
		"zero is accepted": {
			spec: map[string]any{"resource": map[string]any{"cpu": int64(0)}, "podSet": []any{map[string]any{"name": "main",
				"template": map[string]any{"spec": map[string]any{"containers": []any{container(map[string]any{"cpu": int64(0)})}}}}}},
		},
	}
	i := 0
	for name, tc := range cases {
		i++
		t.Run(name, func(t *testing.T) {
			raw := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "QueueUnit",
				"metadata": map[string]any{"name": fmt.Sprintf("numbers-%d", i), "namespace": "default"},
				"spec":     tc.spec,
			}}
			err := env.Client.Create(ctx, raw)
			checkErr(t, err, tc.wantErr)
			if err == nil {
				t.Cleanup(func() { _ = env.Client.Delete(ctx, raw) })
			}
		})
	}
}

func TestQueueUnitDefaults(t *testing.T) {
	ctx := context.Background()
	// Omit the pod set's name and count so the API server's defaults apply.
	raw := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "QueueUnit",
		"metadata": map[string]any{"name": "defaults", "namespace": "default"},
		"spec": map[string]any{"podSet": []any{map[string]any{
			"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "busybox"}}}},
		}}},
	}}
	if err := env.Client.Create(ctx, raw); err != nil {
		t.Fatalf("creating unit without pod-set name and count: %v", err)
	}
	got := &schedulingv1alpha1.QueueUnit{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(raw), got); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, got) })
	if ps := got.Spec.PodSets[0]; ps.Name != schedulingv1alpha1.DefaultPodSetName || ps.Count != 1 {
		t.Errorf("pod set defaults: got name %q count %d, want %q and 1", ps.Name, ps.Count, schedulingv1alpha1.DefaultPodSetName)
	}
}

func TestQueueUnitStatusValidation(t *testing.T) {
	ctx := context.Background()
	unit := validUnit("status-phase")
	if err := env.Client.Create(ctx, unit); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, unit) })

	unit.Status.Phase = "Finished"
	err := env.Client.Status().Update(ctx, unit)
	checkErr(t, err, `status.phase: Unsupported value: "Finished": supported values: "", "Enqueued", "Reserved", "Dequeued", "Running", "Succeed", "Failed"`)

	for _, phase := range []schedulingv1alpha1.QueueUnitPhase{schedulingv1alpha1.Enqueued, schedulingv1alpha1.Dequeued, schedulingv1alpha1.TimeoutBackoff} {
		unit.Status.Phase = phase
		if err := env.Client.Status().Update(ctx, unit); err != nil {
			t.Errorf("phase %s: %v", phase, err)
		}
	}

	unit.Status.AdmissionChecks = []schedulingv1alpha1.AdmissionCheckState{{Name: "check", State: "Maybe", LastTransitionTime: metav1.Now()}}
	err = env.Client.Status().Update(ctx, unit)
	checkErr(t, err, `status.admissionChecks[0].state: Unsupported value: "Maybe"`)
}

func TestQueueValidation(t *testing.T) {
	cases := map[string]struct {
		spec    schedulingv1alpha1.QueueSpec
		wantErr string
	}{
		"each known policy is accepted": {
			spec: schedulingv1alpha1.QueueSpec{QueuePolicy: schedulingv1alpha1.QueuePolicyBlock},
		},
		"an empty policy is accepted (Priority by default)": {
			spec: schedulingv1alpha1.QueueSpec{},
		},
		"an unknown policy is rejected": {
			spec:    schedulingv1alpha1.QueueSpec{QueuePolicy: "FIFO"},
			wantErr: `spec.queuePolicy: Unsupported value: "FIFO": supported values: "Priority", "Block", "Intelligent"`,
		},
		"an admission check without a name is rejected": {
			spec:    schedulingv1alpha1.QueueSpec{AdmissionChecks: []schedulingv1alpha1.AdmissionCheckWithSelector{{}}},
			wantErr: "spec.admissionChecks[0].name",
		},
		"duplicate admission checks are rejected": {
			spec: schedulingv1alpha1.QueueSpec{AdmissionChecks: []schedulingv1alpha1.AdmissionCheckWithSelector{
				{Name: "a"}, {Name: "a"},
			}},
			wantErr: "spec.admissionChecks[1]: Duplicate value",
		},
	}
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: schedulingv1alpha1.QueueNamespace}}
	if err := env.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	i := 0
	for name, tc := range cases {
		i++
		t.Run(name, func(t *testing.T) {
			q := &schedulingv1alpha1.Queue{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("queue-%d", i), Namespace: schedulingv1alpha1.QueueNamespace},
				Spec:       tc.spec,
			}
			err := env.Client.Create(ctx, q)
			checkErr(t, err, tc.wantErr)
			if err == nil {
				t.Cleanup(func() { _ = env.Client.Delete(ctx, q) })
			}
		})
	}
}

// checkErr fails unless err is nil and wantErr empty, or err is an Invalid
// error from the API server whose message contains wantErr.
func checkErr(t *testing.T, err error, wantErr string) {
	t.Helper()
	switch {
	case wantErr == "" && err != nil:
		t.Fatalf("want accepted, got: %v", err)
	case wantErr != "" && err == nil:
		t.Fatalf("want rejected with %q, got accepted", wantErr)
	case wantErr != "" && !apierrors.IsInvalid(err):
		t.Fatalf("want an Invalid error, got: %v", err)
	case wantErr != "" && !strings.Contains(err.Error(), wantErr):
		t.Fatalf("want the error to contain %q, got: %v", wantErr, err)
	}
}
