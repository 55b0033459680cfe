package spark

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	sparkv1beta2 "github.com/koord-queue/koord-queue/pkg/extensions/spark/v1beta2"
)

// A Spark application's pods are made in three steps, and a pod set's
// template is the pod they make, as far as its request goes:
//
//  1. the operator hands Spark the role's pod template (spec.<role>.template;
//     without one, a pod of one container), naming Spark's container
//     spark-kubernetes-driver or spark-kubernetes-executor;
//  2. Spark sizes its container, the one so named or else the template's
//     first: cpu and memory requested (cpuRequest, memoryRequest), its
//     custom resources (spark.<role>.resource.*) as limits, which pods
//     request too; the template's other containers are kept as they are;
//  3. the operator's pod webhook adds the role's init containers and
//     sidecars (a container of the same name and image is not added
//     twice) and its gpu to Spark's container.

// Spark's container names, as the operator's pod templates name them
// (spark.kubernetes.{driver,executor}.podTemplateContainerName).
const (
	driverContainer   = "spark-kubernetes-driver"
	executorContainer = "spark-kubernetes-executor"
)

// role is the driver or the executors.
type role struct {
	// name is "driver" or "executor", as Spark's properties name it.
	name string
	// container is the name the operator gives Spark's container.
	container   string
	spec        *sparkv1beta2.SparkPodSpec
	coreRequest *string
}

func (a *Application) driver() role {
	return role{name: "driver", container: driverContainer, spec: &a.Spec.Driver.SparkPodSpec, coreRequest: a.Spec.Driver.CoreRequest}
}

func (a *Application) executor() role {
	return role{name: "executor", container: executorContainer, spec: &a.Spec.Executor.SparkPodSpec, coreRequest: a.Spec.Executor.CoreRequest}
}

// podSpec is what a pod of r is made of, as far as its request goes: its
// containers' and init containers' names and resources (and an init
// container's restart policy), the pod's resources and its overhead.
func (a *Application) podSpec(r role) (corev1.PodSpec, error) {
	spec, err := r.template()
	if err != nil {
		return corev1.PodSpec{}, err
	}
	i := slices.IndexFunc(spec.Containers, func(c corev1.Container) bool { return c.Name == r.container })
	switch {
	case i < 0 && len(spec.Containers) > 0:
		i = 0
	case i < 0:
		spec.Containers, i = []corev1.Container{{Name: r.container}}, 0
	}
	request, err := a.sparkRequest(r)
	if err != nil {
		return corev1.PodSpec{}, err
	}
	res := &spec.Containers[i].Resources
	res.Requests = mergedInto(res.Requests, request)
	for _, c := range r.spec.InitContainers {
		if !hasContainer(spec.InitContainers, c) {
			spec.InitContainers = append(spec.InitContainers, c)
		}
	}
	for _, c := range r.spec.Sidecars {
		if !hasContainer(spec.Containers, c) {
			spec.Containers = append(spec.Containers, c)
		}
	}
	return resourcesOnly(spec), nil
}

// template is r's pod template's spec, or none.
func (r role) template() (corev1.PodSpec, error) {
	if r.spec.Template == nil || len(r.spec.Template.Raw) == 0 {
		return corev1.PodSpec{}, nil
	}
	var t corev1.PodTemplateSpec
	if err := json.Unmarshal(r.spec.Template.Raw, &t); err != nil {
		return corev1.PodSpec{}, fmt.Errorf("template: %w", err)
	}
	return t.Spec, nil
}

// sparkRequest is what Spark's container requests: its cpu and memory,
// its custom resources and the operator's gpu.
func (a *Application) sparkRequest(r role) (corev1.ResourceList, error) {
	cpu, err := a.cpuRequest(r.name, r.spec, r.coreRequest)
	if err != nil {
		return nil, err
	}
	memory, err := a.memoryRequest(r.name, r.spec)
	if err != nil {
		return nil, err
	}
	request, err := a.customResources(r.name)
	if err != nil {
		return nil, err
	}
	request[corev1.ResourceCPU], request[corev1.ResourceMemory] = cpu, memory
	if g := r.spec.GPU; g != nil {
		if g.Name == "" || g.Quantity < 0 {
			return nil, fmt.Errorf("gpu: want a resource name and a quantity of at least 0, got %q and %d", g.Name, g.Quantity)
		}
		if g.Quantity > 0 { // the webhook adds none of less
			request[corev1.ResourceName(g.Name)] = *resource.NewQuantity(g.Quantity, resource.DecimalSI)
		}
	}
	return request, nil
}

// customResources are the resources the Spark properties
// spark.<role>.resource.<name>.amount ask for, named as Spark asks
// Kubernetes for them: <vendor>/<name>, the vendor being
// spark.<role>.resource.<name>.vendor. Spark refuses a resource without an
// amount or a vendor, and leaves out one of no amount.
func (a *Application) customResources(role string) (corev1.ResourceList, error) {
	prefix := "spark." + role + ".resource."
	var names []string
	for key := range a.Spec.SparkConf {
		rest, ok := strings.CutPrefix(key, prefix)
		if !ok {
			continue
		}
		name, _, ok := strings.Cut(rest, ".")
		if !ok {
			return nil, fmt.Errorf("sparkConf %s: a resource is set as %s<name>.amount and %s<name>.vendor", key, prefix, prefix)
		}
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	slices.Sort(names) // the first error is the same each time
	out := corev1.ResourceList{}
	for _, name := range names {
		key := prefix + name + "."
		raw, ok := a.Spec.SparkConf[key+"amount"]
		if !ok {
			return nil, fmt.Errorf("sparkConf %samount: Spark needs an amount for the resource %s", key, name)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(raw), 10, 64)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("sparkConf %samount %q: want a whole number", key, raw)
		}
		if n == 0 {
			continue
		}
		vendor := a.Spec.SparkConf[key+"vendor"]
		if vendor == "" {
			return nil, fmt.Errorf("sparkConf %svendor: Spark asks for the resource <vendor>/%s and refuses one without a vendor, such as nvidia.com", key, name)
		}
		k8sName := vendor + "/" + name
		if errs := validation.IsQualifiedName(k8sName); len(errs) > 0 {
			return nil, fmt.Errorf("sparkConf %s{vendor,amount}: %q is no resource name: %s", key, k8sName, strings.Join(errs, "; "))
		}
		out[corev1.ResourceName(k8sName)] = *resource.NewQuantity(n, resource.DecimalSI)
	}
	return out, nil
}

// hasContainer reports whether cs has a container of c's name and image,
// as the operator's webhook tells them apart.
func hasContainer(cs []corev1.Container, c corev1.Container) bool {
	return slices.ContainsFunc(cs, func(have corev1.Container) bool { return have.Name == c.Name && have.Image == c.Image })
}

// mergedInto is into with from's amounts over its own.
func mergedInto(into, from corev1.ResourceList) corev1.ResourceList {
	out := make(corev1.ResourceList, len(into)+len(from))
	for name, q := range into {
		out[name] = q
	}
	for name, q := range from {
		out[name] = q
	}
	return out
}

// resourcesOnly is spec with nothing but what its pod's request is made of.
func resourcesOnly(spec corev1.PodSpec) corev1.PodSpec {
	out := corev1.PodSpec{Resources: spec.Resources, Overhead: spec.Overhead}
	for _, c := range spec.Containers {
		out.Containers = append(out.Containers, corev1.Container{Name: c.Name, Resources: c.Resources})
	}
	for _, c := range spec.InitContainers {
		out.InitContainers = append(out.InitContainers, corev1.Container{Name: c.Name, Resources: c.Resources, RestartPolicy: c.RestartPolicy})
	}
	return out
}
