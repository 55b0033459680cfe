// Package streamedlists has a binary's informers stream their initial lists
// (client-go's WatchListClient: a watch with sendInitialEvents) instead of
// listing every object in one response.
//
// A list of 50,000 QueueUnits arrives as one response, decoded whole before
// the first object reaches the cache's transform, so a start briefly holds
// every unit as decoded (several kilobytes each) beside the list's bytes:
// most of koord-queue's peak memory at that scale. Streamed, each object is
// transformed as it arrives and only what the cache keeps stays.
//
// API servers from Kubernetes 1.34 serve streams by default (the WatchList
// feature, beta); any other refuses the request, and client-go then lists as
// before, logging it at verbosity 4.
package streamedlists

import (
	"flag"

	clientfeatures "k8s.io/client-go/features"
)

// FlagName is the flag BindFlags registers.
const FlagName = "stream-initial-lists"

// BindFlags registers --stream-initial-lists in fs, on by default, and
// returns where it lands; Apply it before any informer starts.
func BindFlags(fs *flag.FlagSet) *bool {
	return fs.Bool(FlagName, true, "informers stream their initial lists (a watch with sendInitialEvents, served by Kubernetes 1.34 and later by default), keeping each object trimmed as it arrives, rather than receiving each list whole: a start's peak memory is then about what the caches keep; where the API server does not serve it they list as before")
}

// Apply turns client-go's WatchListClient on or off for every informer made
// from now on; client-go's other feature gates keep their settings
// (KUBE_FEATURE_<name> environment variables).
func Apply(on bool) {
	current := clientfeatures.FeatureGates()
	if g, ok := current.(gates); ok {
		current = g.others
	}
	clientfeatures.ReplaceFeatureGates(gates{others: current, watchList: on})
}

// Enabled says whether informers made now stream their initial lists.
func Enabled() bool {
	return clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient)
}

// gates are client-go's feature gates with WatchListClient set.
type gates struct {
	others    clientfeatures.Gates
	watchList bool
}

func (g gates) Enabled(f clientfeatures.Feature) bool {
	if f == clientfeatures.WatchListClient {
		return g.watchList
	}
	return g.others.Enabled(f)
}
