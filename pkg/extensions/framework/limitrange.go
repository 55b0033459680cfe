package framework

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A container that does not say what it requests or limits is given, when
// its pod is created, its namespace's LimitRange defaults (the API
// server's LimitRanger admission plugin): its pods then hold more than
// the container says. A unit's pod sets ask for what the pods will hold
// (unitPodSets), as Kueue's workloads do.
//
// Only LimitRange items of type Container have defaults: the API server
// refuses default and defaultRequest on type Pod (Kueue reads them for
// pod-level resources, but no such LimitRange can be made).

// containerDefaults are what the LimitRanger gives a container of a
// namespace: Limits for each resource it sets no limit for, Requests for
// each it sets no request for.
type containerDefaults struct {
	Limits, Requests corev1.ResourceList
}

// empty reports whether d gives nothing.
func (d containerDefaults) empty() bool { return len(d.Limits) == 0 && len(d.Requests) == 0 }

// limitRangeDefaults are the defaults the LimitRanger gives a container of
// the namespace of ranges. It applies each LimitRange in turn (each has
// one Container item at most), and each gives only what is still missing,
// so the first to give a resource wins; the API server takes a
// namespace's LimitRanges in no set order, so they are read by name. An
// item's defaults are as the API server stores them: a default limit
// from max, a default request from the default limit, else from min.
func limitRangeDefaults(ranges []corev1.LimitRange) containerDefaults {
	ordered := make([]*corev1.LimitRange, len(ranges))
	for i := range ranges {
		ordered[i] = &ranges[i]
	}
	slices.SortFunc(ordered, func(a, b *corev1.LimitRange) int { return strings.Compare(a.Name, b.Name) })
	var out containerDefaults
	for _, lr := range ordered {
		for i := range lr.Spec.Limits {
			if item := &lr.Spec.Limits[i]; item.Type == corev1.LimitTypeContainer {
				limits, requests := itemDefaults(item)
				out.Limits = withEach(out.Limits, limits, false)
				out.Requests = withEach(out.Requests, requests, false)
			}
		}
	}
	return out
}

// itemDefaults are a Container item's default limits and requests, as the
// API server's defaulting stores them (SetDefaults_LimitRangeItem): a
// default limit is the item's default, else its max; a default request is
// its defaultRequest, else the default limit, else its min.
func itemDefaults(item *corev1.LimitRangeItem) (limits, requests corev1.ResourceList) {
	limits = withEach(withEach(nil, item.Default, true), item.Max, false)
	requests = withEach(withEach(withEach(nil, item.DefaultRequest, true), limits, false), item.Min, false)
	return limits, requests
}

// withEach is into with each amount of from: over into's own when
// override is true, else only those into lacks. It writes into no map it
// was given.
func withEach(into, from corev1.ResourceList, override bool) corev1.ResourceList {
	var out corev1.ResourceList
	for name, q := range from {
		if _, ok := into[name]; ok && !override {
			continue
		}
		if out == nil {
			out = make(corev1.ResourceList, len(into)+len(from))
			for n, have := range into {
				out[n] = have
			}
		}
		out[name] = q.DeepCopy()
	}
	if out == nil {
		return into
	}
	return out
}

// apply gives each container and init container (sidecars included) of
// spec what its pod's creation gives it: requests from its own limits, as
// the API server defaults a pod before its admission plugins run, then d.
func (d containerDefaults) apply(spec *corev1.PodSpec) {
	if d.empty() {
		return
	}
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range cs {
			r := &cs[i].Resources
			r.Requests = withEach(r.Requests, r.Limits, false)
			r.Limits = withEach(r.Limits, d.Limits, false)
			r.Requests = withEach(r.Requests, d.Requests, false)
		}
	}
}

// namespaceDefaults are the defaults the LimitRanges of namespace give its
// containers, read through c.
func namespaceDefaults(ctx context.Context, c client.Reader, namespace string) (containerDefaults, error) {
	var list corev1.LimitRangeList
	if err := c.List(ctx, &list, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		return containerDefaults{}, fmt.Errorf("listing the LimitRanges of namespace %s: %w", namespace, err)
	}
	return limitRangeDefaults(list.Items), nil
}
