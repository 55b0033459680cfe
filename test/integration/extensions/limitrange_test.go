package extensions

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/extensionstest"
	qt "github.com/koord-queue/koord-queue/pkg/quota/quotatest"
	"github.com/koord-queue/koord-queue/pkg/resources"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/test/testenv"
)

// TestLimitRangeDefaults: a Job in a namespace whose LimitRanges give
// containers defaults gets a unit asking for what the API server's
// LimitRanger gives its pods: a pod made from the Job's template in that
// namespace requests what each of the unit's pods asks for.
func TestLimitRangeDefaults(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	// Two LimitRanges giving different resources: the API server applies
	// them in no set order.
	create(t, wrappers.MakeLimitRange("defaults", ns).Item(corev1.LimitRangeItem{
		Type:           corev1.LimitTypeContainer,
		Default:        qt.Res("cpu", "1", "memory", "512Mi"), // memory's default request is its default limit
		DefaultRequest: qt.Res("cpu", "250m"),
		Max:            qt.Res("cpu", "4", "memory", "4Gi"),
	}).Obj())
	create(t, wrappers.MakeLimitRange("storage", ns).Container(nil, qt.Res("ephemeral-storage", "1Gi")).Obj())

	j := extensionstest.MakeJob("defaulted", ns).Quota("team-a").Parallelism(2).Request("memory", "256Mi").Obj()
	spec := &j.Spec.Template.Spec
	spec.Containers = append(spec.Containers, corev1.Container{Name: "limited", Image: "busybox",
		Resources: corev1.ResourceRequirements{Limits: qt.Res("cpu", "500m")}})
	spec.InitContainers = []corev1.Container{
		{Name: "fetch", Image: "busybox"},
		{Name: "mesh", Image: "busybox", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)},
	}
	create(t, j)

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "like-defaulted-", Namespace: ns}, Spec: *j.Spec.Template.Spec.DeepCopy()}
	create(t, pod)
	want := resources.PodRequests(&pod.Spec)
	if said := resources.PodRequests(&j.Spec.Template.Spec); resources.Equal(want, said) {
		t.Fatalf("the API server gave the pod what its template says, %s: its LimitRanger did not default it", resources.Describe(want))
	}

	// The LimitRanges may reach the extensions' cache after the Job: touch
	// the Job until its unit, waiting, is resized to them.
	key := client.ObjectKeyFromObject(j)
	var u schedulingv1alpha1.QueueUnit
	testenv.Eventually(t, testenv.DefaultTimeout, func(ctx context.Context) error {
		if err := k8s.Get(ctx, key, &u); err != nil {
			return fmt.Errorf("waiting for the Job's unit: %w", err)
		}
		if got := resources.PodRequests(&u.Spec.PodSets[0].Template.Spec); !resources.Equal(want, got) {
			updateJob(t, j, func() { metav1.SetMetaDataAnnotation(&j.ObjectMeta, "touch", metav1.Now().String()) })
			return fmt.Errorf("waiting for each of the unit's pods to ask for what the pod was given, %s; last seen: %s", resources.Describe(want), resources.Describe(got))
		}
		return nil
	})
	if got, wantTotal := u.Spec.Request, resources.PodsRequests([]corev1.ResourceList{want}, []int32{2}); !resources.Equal(got, wantTotal) {
		t.Errorf("the unit asks for %s in all, want 2 × the pod's, %s", resources.Describe(got), resources.Describe(wantTotal))
	}
}

// TestRuntimeClassOverhead: a Job whose template names a RuntimeClass with
// a pod overhead gets a unit asking for it, as the API server's
// RuntimeClass admission plugin gives it to the Job's pods.
func TestRuntimeClassOverhead(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	rc := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: ns + "-sandboxed"}, Handler: "runsc",
		Overhead: &nodev1.Overhead{PodFixed: qt.Res("cpu", "250m", "memory", "120Mi")}}
	create(t, rc)
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), rc) })

	j := extensionstest.MakeJob("sandboxed", ns).Quota("team-a").Parallelism(2).Request("cpu", "1").Obj()
	j.Spec.Template.Spec.RuntimeClassName = ptr.To(rc.Name)
	create(t, j)

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "like-sandboxed-", Namespace: ns}, Spec: *j.Spec.Template.Spec.DeepCopy()}
	create(t, pod)
	want := resources.PodRequests(&pod.Spec)
	if pod.Spec.Overhead == nil {
		t.Fatalf("the API server gave the pod no overhead: its RuntimeClass plugin is off")
	}

	// The RuntimeClass may reach the extensions' cache after the Job: touch
	// the Job until its unit, waiting, is resized to it.
	key := client.ObjectKeyFromObject(j)
	var u schedulingv1alpha1.QueueUnit
	testenv.Eventually(t, testenv.DefaultTimeout, func(ctx context.Context) error {
		if err := k8s.Get(ctx, key, &u); err != nil {
			return fmt.Errorf("waiting for the Job's unit: %w", err)
		}
		if got := resources.PodRequests(&u.Spec.PodSets[0].Template.Spec); !resources.Equal(want, got) {
			updateJob(t, j, func() { metav1.SetMetaDataAnnotation(&j.ObjectMeta, "touch", metav1.Now().String()) })
			return fmt.Errorf("waiting for each of the unit's pods to ask for what the pod was given, %s; last seen: %s", resources.Describe(want), resources.Describe(got))
		}
		return nil
	})
}
