// Package resources computes what a queue unit asks for: the effective request
// of one pod and the total request of a unit's pod sets. It is the one place
// this maths lives, so the queue controller and the job extensions agree.
package resources

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"gopkg.in/inf.v0"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
)

// podLevelResources are the resources a pod-level spec.resources may set, as
// in Kubernetes 1.34.
var podLevelResources = map[corev1.ResourceName]bool{
	corev1.ResourceCPU:    true,
	corev1.ResourceMemory: true,
}

// PodRequests is the effective request of one pod, as the kube-scheduler counts
// it: regular containers summed, init containers by their maximum (sidecars,
// that is restartable init containers, add to everything started after them),
// pod-level requests where set, and overhead added. A container's limit stands
// in for a request it does not set, as the API server's defaulting does.
func PodRequests(spec *corev1.PodSpec) corev1.ResourceList {
	out := corev1.ResourceList{}
	if spec == nil {
		return out
	}
	for i := range spec.Containers {
		Add(out, containerRequests(&spec.Containers[i]))
	}
	sidecars := corev1.ResourceList{}
	initPeak := corev1.ResourceList{}
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		reqs := containerRequests(c)
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			// A sidecar runs alongside the regular containers and every
			// init container after it.
			Add(out, reqs)
			Add(sidecars, reqs)
			maxInto(initPeak, sidecars)
			continue
		}
		running := corev1.ResourceList{}
		Add(running, reqs)
		Add(running, sidecars)
		maxInto(initPeak, running)
	}
	maxInto(out, initPeak)
	if spec.Resources != nil {
		for name, q := range podLevel(spec.Resources) {
			out[name] = q.DeepCopy()
		}
	}
	Add(out, spec.Overhead)
	return out
}

// ErrNegative is returned for an amount below zero. The API server does not
// validate the pod templates inside a job of a custom resource, so a
// template may ask for "-8" cpu, which summed with others would lower the
// job's request below what its pods take.
var ErrNegative = errors.New("a resource amount must not be negative")

// CheckPodSpec reports the first amount below zero in spec: a container's,
// an init container's or a sidecar's request or limit, the overhead, or a
// pod-level request or limit, whether or not it is counted. The error names
// the field (containers[1] (master): resources.requests[cpu]) and wraps
// ErrNegative. Every amount is checked before any is summed: a negative one
// may hide in a total that is not.
func CheckPodSpec(spec *corev1.PodSpec) error {
	if spec == nil {
		return nil
	}
	for _, list := range []struct {
		field      string
		containers []corev1.Container
	}{{"containers", spec.Containers}, {"initContainers", spec.InitContainers}} {
		for i := range list.containers {
			c := &list.containers[i]
			if err := checkRequirements("resources", &c.Resources); err != nil {
				return fmt.Errorf("%s[%d] (%s): %w", list.field, i, c.Name, err)
			}
		}
	}
	if err := CheckList("overhead", spec.Overhead); err != nil {
		return err
	}
	if spec.Resources != nil {
		return checkRequirements("resources", spec.Resources)
	}
	return nil
}

// CheckList reports the first amount of list below zero, resources in name
// order; field is the list's name in the error.
func CheckList(field string, list corev1.ResourceList) error {
	for _, q := range list { // allocate nothing unless one is negative
		if q.Sign() >= 0 {
			continue
		}
		names := make([]string, 0, len(list))
		for n := range list {
			names = append(names, string(n))
		}
		sort.Strings(names)
		for _, n := range names { // the same first one, whatever the map's order
			if q := list[corev1.ResourceName(n)]; q.Sign() < 0 {
				return fmt.Errorf("%s[%s] is %s: %w", field, n, q.String(), ErrNegative)
			}
		}
	}
	return nil
}

func checkRequirements(field string, r *corev1.ResourceRequirements) error {
	if err := CheckList(field+".requests", r.Requests); err != nil {
		return err
	}
	return CheckList(field+".limits", r.Limits)
}

// PodSetsRequests is a unit's total request: for each pod set, count times
// the effective request of its pod template.
func PodSetsRequests(podSets []schedulingv1alpha1.PodSet) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := range podSets {
		ps := &podSets[i]
		addPods(out, PodRequests(&ps.Template.Spec), ps.Count)
	}
	return out
}

// PodsRequests is what pods[i] pods asking podRequests[i] each ask for in
// all. With each pod set's pod request and count it is PodSetsRequests; with
// fewer pods, what a unit admitted partially holds. The decision core and
// the rule that rebuilds a charge from a unit's admissions both count here,
// so they agree to the last milli-unit.
func PodsRequests(podRequests []corev1.ResourceList, pods []int32) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i, req := range podRequests {
		if i < len(pods) {
			addPods(out, req, pods[i])
		}
	}
	return out
}

// addPods adds n pods asking podRequest each to into.
func addPods(into, podRequest corev1.ResourceList, n int32) {
	if n <= 0 {
		return
	}
	for name, q := range podRequest {
		total := Multiply(q, int64(n))
		if cur, ok := into[name]; ok {
			total.Add(cur)
		}
		into[name] = total
	}
}

// Fits reports whether a asks for no more than b of any resource (one b
// does not name: none).
func Fits(a, b corev1.ResourceList) bool {
	for name, q := range a {
		if have := b[name]; q.Cmp(have) > 0 {
			return false
		}
	}
	return true
}

// Max is, per resource, the larger of a's and b's amounts.
func Max(a, b corev1.ResourceList) corev1.ResourceList {
	out := a.DeepCopy()
	if out == nil {
		out = corev1.ResourceList{}
	}
	for name, q := range b {
		if have, ok := out[name]; !ok || q.Cmp(have) > 0 {
			out[name] = q.DeepCopy()
		}
	}
	return out
}

// Describe renders list for messages: "cpu=4, memory=8Gi", by name;
// "nothing" when empty.
func Describe(list corev1.ResourceList) string {
	if len(list) == 0 {
		return "nothing"
	}
	parts := make([]string, 0, len(list))
	for name, q := range list {
		parts = append(parts, string(name)+"="+q.String())
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

// Equal reports whether a and b ask for the same amount of every resource,
// a resource one of them leaves out counting as zero.
func Equal(a, b corev1.ResourceList) bool {
	for name, q := range a {
		if other := b[name]; q.Cmp(other) != 0 {
			return false
		}
	}
	for name, q := range b {
		if _, ok := a[name]; !ok && !q.IsZero() {
			return false
		}
	}
	return true
}

// Multiply returns q times n, exact however large (in decimal arithmetic,
// never wrapping around an int64): a pod set of 2e9 pods asking 1e10 cpu each
// asks 2e19 cpu, which those who count it must refuse, not read as a small
// or negative number.
func Multiply(q resource.Quantity, n int64) resource.Quantity {
	product := new(inf.Dec).Mul(q.AsDec(), inf.NewDec(n, 0))
	return *resource.NewDecimalQuantity(*product, q.Format)
}

// containerRequests is a container's requests with its limits standing in for
// requests it does not set.
func containerRequests(c *corev1.Container) corev1.ResourceList {
	if len(c.Resources.Limits) == 0 {
		return c.Resources.Requests
	}
	out := corev1.ResourceList{}
	for name, q := range c.Resources.Limits {
		out[name] = q
	}
	for name, q := range c.Resources.Requests {
		out[name] = q
	}
	return out
}

// podLevel is the pod-level requests, with limits standing in for missing
// requests, restricted to the resources Kubernetes supports there.
func podLevel(r *corev1.ResourceRequirements) corev1.ResourceList {
	out := corev1.ResourceList{}
	for name, q := range r.Limits {
		if podLevelResources[name] {
			out[name] = q
		}
	}
	for name, q := range r.Requests {
		if podLevelResources[name] {
			out[name] = q
		}
	}
	return out
}

// Add adds list to into, resource by resource.
func Add(into, list corev1.ResourceList) {
	for name, q := range list {
		if cur, ok := into[name]; ok {
			cur.Add(q)
			into[name] = cur
		} else {
			into[name] = q.DeepCopy()
		}
	}
}

func maxInto(into, list corev1.ResourceList) {
	for name, q := range list {
		if cur, ok := into[name]; !ok || q.Cmp(cur) > 0 {
			into[name] = q.DeepCopy()
		}
	}
}
