package topology_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/koord-queue/koord-queue/pkg/topology"
)

// shown is a DomainCapacity as a reader sees it: each amount as a string.
type shown struct {
	Values                           []string
	Nodes                            int
	Allocatable, Held, Assumed, Free map[string]string
}

func show(ds []topology.DomainCapacity) []shown {
	str := func(l corev1.ResourceList) map[string]string {
		out := map[string]string{}
		for name, q := range l {
			out[string(name)] = q.String()
		}
		return out
	}
	out := make([]shown, 0, len(ds))
	for _, d := range ds {
		out = append(out, shown{Values: d.Values, Nodes: d.Nodes, Allocatable: str(d.Allocatable), Held: str(d.Held),
			Assumed: str(d.Assumed), Free: str(d.Free)})
	}
	return out
}

// amounts is cpu, memory, GPUs and pods, in that order, as shown.
func amounts(cpu, memory, gpus, pods string) map[string]string {
	return map[string]string{"cpu": cpu, "memory": memory, string(gpu): gpus, "pods": pods}
}

func TestDomainsSayWhatEachHasFree(t *testing.T) {
	// A block of cluster() is 8 hosts of 32 cpu, 128Gi, 4 GPUs and 110
	// pods; a rack is 2 of them.
	blockAlloc, rackAlloc := amounts("256", "1Ti", "32", "880"), amounts("64", "256Gi", "8", "220")
	none := amounts("0", "0", "0", "0")
	huge := "1e30"
	cases := map[string]struct {
		held          map[string]corev1.ResourceList
		assume        []topology.Domain // 3 one-GPU pods each (gpus(3))
		level         int
		offset, limit int
		want          []shown
		wantTotal     int
	}{
		"a block counts the hosts of its racks, and what their pods hold": {
			held:  map[string]corev1.ResourceList{"host-a1-1": list("cpu", "4", string(gpu), "2")},
			level: 0, limit: 10,
			want: []shown{
				{Values: []string{"block-a"}, Nodes: 8, Allocatable: blockAlloc, Held: amounts("4", "0", "2", "0"), Assumed: none,
					Free: amounts("252", "1Ti", "30", "880")},
				{Values: []string{"block-b"}, Nodes: 8, Allocatable: blockAlloc, Held: none, Assumed: none, Free: blockAlloc},
			},
			wantTotal: 2,
		},
		"pods admitted to a rack and not on a node yet are assumed there, and not free": {
			assume: []topology.Domain{rack("a", "a2", 3)},
			level:  1, offset: 1, limit: 1,
			want: []shown{{Values: []string{"block-a", "rack-a2"}, Nodes: 2, Allocatable: rackAlloc, Held: none,
				Assumed: amounts("6", "0", "3", "0"), Free: amounts("58", "256Gi", "5", "220")}},
			wantTotal: 8,
		},
		"a node whose pods hold more than it has adds nothing free, and takes nothing from the others": {
			held:  map[string]corev1.ResourceList{"host-a1-1": list(string(gpu), "6")},
			level: 1, limit: 1,
			want: []shown{{Values: []string{"block-a", "rack-a1"}, Nodes: 2, Allocatable: rackAlloc, Held: amounts("0", "0", "6", "0"),
				Assumed: none, Free: amounts("64", "256Gi", "4", "220")}},
			wantTotal: 8,
		},
		"pods asking for more than anything has add up to a bound, not around to a negative": {
			held: func() map[string]corev1.ResourceList {
				held := map[string]corev1.ResourceList{}
				for _, n := range cluster() {
					held[n.Name] = list("cpu", huge)
				}
				return held
			}(),
			level: 0, limit: 1,
			want: []shown{{Values: []string{"block-a"}, Nodes: 8, Allocatable: blockAlloc, Held: amounts("4611686018427387904m", "0", "0", "0"),
				Assumed: none, Free: amounts("0", "1Ti", "32", "880")}},
			wantTotal: 2,
		},
		"a page past the last domain is empty": {
			level: 2, offset: 16, limit: 5, want: []shown{}, wantTotal: 16,
		},
		"a level the topology does not have has no domains": {
			level: 3, limit: 5, want: []shown{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := topology.NewSnapshot(levels, cluster(), tc.held)
			if tc.assume != nil {
				if got := s.Assume("", gpus(3, topology.Ask{}), tc.assume); got != 3 {
					t.Fatalf("Assume placed %d pods, want 3", got)
				}
			}
			got, total := s.Domains(tc.level, tc.offset, tc.limit)
			if diff := cmp.Diff(tc.want, show(got)); diff != "" {
				t.Errorf("Domains(%d, %d, %d) (-want +got):\n%s", tc.level, tc.offset, tc.limit, diff)
			}
			if total != tc.wantTotal {
				t.Errorf("Domains(%d, ...) counts %d domains, want %d", tc.level, total, tc.wantTotal)
			}
		})
	}
}

// TestDomainsAddUp: what a placement takes is assumed in each domain
// above it too, and at every level the domains' amounts add up to
// allocatable = held + assumed + free on nodes none of whose pods hold
// more than they have.
func TestDomainsAddUp(t *testing.T) {
	held := map[string]corev1.ResourceList{"host-a1-1": list("cpu", "3", string(gpu), "1"), "host-b4-2": list(string(gpu), "4")}
	s := topology.NewSnapshot(levels, cluster(), held)
	if r, err := s.Place([]topology.PodSet{gpus(11, required(blockLabel))}); err != nil || !r.Fits() {
		t.Fatalf("Place: %+v, %v", r, err)
	}
	for level := range levels.Labels {
		ds, total := s.Domains(level, 0, 100)
		if len(ds) != total {
			t.Fatalf("level %d: a page of %d of %d domains", level, len(ds), total)
		}
		sums := map[string]int64{}
		for _, d := range ds {
			for name, a := range d.Allocatable {
				h, as, f := d.Held[name], d.Assumed[name], d.Free[name]
				if a.MilliValue() != h.MilliValue()+as.MilliValue()+f.MilliValue() {
					t.Errorf("level %d, domain %v, %s: allocatable %s, held %s + assumed %s + free %s", level, d.Values, name, a.String(), h.String(), as.String(), f.String())
				}
				sums[fmt.Sprint("assumed ", name)] += as.MilliValue()
			}
		}
		want := map[string]int64{"assumed cpu": 22_000, "assumed memory": 0, fmt.Sprint("assumed ", gpu): 11_000, "assumed pods": 0}
		if diff := cmp.Diff(want, sums); diff != "" {
			t.Errorf("level %d: what the level's domains assume, in milli-units (-want +got):\n%s", level, diff)
		}
	}
}
