package admission

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/koord-queue/koord-queue/pkg/topology"
	"github.com/koord-queue/koord-queue/pkg/visibility/api"
)

// domainViewMaxAge is how long a snapshot built for the visibility API is
// shown before it is built again. Building one costs what an admission
// cycle's does, every node (reading what the nodes' pods hold under the
// Cache's lock among it); whatever the number of callers, each Topology
// costs that at most once in this time.
const domainViewMaxAge = time.Second

// domainViews answers the visibility API's views of the Topologies'
// domains: per level, per domain, what the nodes offer, what their pods
// hold, what units admitted to the domain and not on a node yet keep, and
// what is free, from a snapshot built as an admission cycle builds its own
// (topologies.snapshotInputs), outside the Cache's lock.
type domainViews struct {
	mu         *sync.Mutex // the Cache's
	topologies *topologies
	now        func() time.Time

	// building is held while a snapshot is looked up or built, so that
	// callers of one moment share one build; it is taken before mu,
	// never while mu is held.
	building sync.Mutex
	built    map[string]builtSnapshot
}

// builtSnapshot is a snapshot of a Topology built for the views, and
// when. It is only read once built.
type builtSnapshot struct {
	snap *topology.Snapshot
	at   time.Time
}

// Topologies lists the Topologies, by name.
func (v *domainViews) Topologies() []api.TopologyView {
	v.mu.Lock()
	defer v.mu.Unlock()
	names := slices.Sorted(maps.Keys(v.topologies.byName))
	out := make([]api.TopologyView, 0, len(names))
	for _, name := range names {
		out = append(out, api.TopologyView{Name: name, Levels: topology.LevelsOf(v.topologies.byName[name]).Labels})
	}
	return out
}

// TopologyDomains is the page of the domains of the Topology name's level
// (its node label; "" for the top level) from offset, at most limit of
// them (at most api.MaxLimit; that many when limit is 0): false when the
// Topology does not exist, an error when it has no such level.
func (v *domainViews) TopologyDomains(name, level string, offset, limit int) (api.TopologyDomainList, bool, error) {
	if limit <= 0 || limit > api.MaxLimit {
		limit = api.MaxLimit
	}
	offset = max(offset, 0)
	s, ok := v.snapshot(name)
	if !ok {
		return api.TopologyDomainList{}, false, nil
	}
	levels := s.Levels().Labels
	if len(levels) == 0 { // its CRD asks for one at least
		return api.TopologyDomainList{}, true, fmt.Errorf("topology %q has no levels", name)
	}
	at := 0
	if level != "" {
		if at = s.Levels().Index(level); at < 0 {
			return api.TopologyDomainList{}, true, fmt.Errorf("topology %q has no level %q: its levels are %s", name, level, strings.Join(levels, ", "))
		}
	}
	domains, total := s.Domains(at, offset, limit)
	out := api.TopologyDomainList{Topology: name, Level: levels[at], Levels: levels[:at+1], Total: total, Offset: offset, Limit: limit,
		Items: make([]api.DomainView, 0, len(domains))}
	for _, d := range domains {
		out.Items = append(out.Items, api.DomainView{Values: d.Values, Nodes: d.Nodes, Allocatable: d.Allocatable, Held: d.Held,
			Assumed: d.Assumed, Free: d.Free})
	}
	return out, true, nil
}

// snapshot is a snapshot of the Topology name at most domainViewMaxAge
// old, built now if none is; false when the Topology does not exist.
func (v *domainViews) snapshot(name string) (*topology.Snapshot, bool) {
	v.building.Lock()
	defer v.building.Unlock()
	now := v.now()
	v.mu.Lock()
	t, ok := v.topologies.byName[name]
	if b, cached := v.built[name]; ok && cached && !now.Before(b.at) && now.Sub(b.at) < domainViewMaxAge &&
		slices.Equal(b.snap.Levels().Labels, topology.LevelsOf(t).Labels) {
		v.mu.Unlock()
		return b.snap, true
	}
	var in snapshotInputs
	var err error
	if ok {
		in, err = v.topologies.snapshotInputs(name)
	}
	v.mu.Unlock()
	if !ok || err != nil {
		delete(v.built, name)
		return nil, false
	}
	s := in.build()
	for n, b := range v.built {
		if now.Sub(b.at) >= domainViewMaxAge {
			delete(v.built, n)
		}
	}
	if v.built == nil {
		v.built = map[string]builtSnapshot{}
	}
	v.built[name] = builtSnapshot{snap: s, at: now}
	return s, true
}
