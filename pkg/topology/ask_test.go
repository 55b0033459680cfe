package topology_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/topology"
)

const (
	blockLabel = "cloud.provider.com/topology-block"
	rackLabel  = "cloud.provider.com/topology-rack"
	hostLabel  = "kubernetes.io/hostname"
)

func TestParseAsk(t *testing.T) {
	cases := map[string]struct {
		annotations map[string]string
		want        topology.Ask
		wantErr     string
	}{
		"no annotation asks for no level": {
			annotations: map[string]string{"other": "x"},
		},
		"Kueue's required annotation is read": {
			annotations: map[string]string{topology.AnnotationPodSetRequiredTopologyKueue: rackLabel},
			want:        topology.Ask{Level: rackLabel, Required: true, Key: topology.AnnotationPodSetRequiredTopologyKueue},
		},
		"Kueue's preferred annotation is read": {
			annotations: map[string]string{topology.AnnotationPodSetPreferredTopologyKueue: blockLabel},
			want:        topology.Ask{Level: blockLabel, Key: topology.AnnotationPodSetPreferredTopologyKueue},
		},
		"koord-queue's required annotation is read": {
			annotations: map[string]string{topology.AnnotationPodSetRequiredTopology: rackLabel},
			want:        topology.Ask{Level: rackLabel, Required: true, Key: topology.AnnotationPodSetRequiredTopology},
		},
		"koord-queue's preferred annotation is read": {
			annotations: map[string]string{topology.AnnotationPodSetPreferredTopology: hostLabel},
			want:        topology.Ask{Level: hostLabel, Key: topology.AnnotationPodSetPreferredTopology},
		},
		"both keys of one kind with the same level are accepted": {
			annotations: map[string]string{topology.AnnotationPodSetRequiredTopologyKueue: rackLabel, topology.AnnotationPodSetRequiredTopology: rackLabel},
			want:        topology.Ask{Level: rackLabel, Required: true, Key: topology.AnnotationPodSetRequiredTopology},
		},
		"both keys of one kind with different levels are an error": {
			annotations: map[string]string{topology.AnnotationPodSetRequiredTopologyKueue: rackLabel, topology.AnnotationPodSetRequiredTopology: blockLabel},
			wantErr:     `kueue.x-k8s.io/podset-required-topology is "cloud.provider.com/topology-rack" but koord-queue/podset-required-topology is "cloud.provider.com/topology-block": set one, or both to the same level`,
		},
		"a required and a preferred level are an error": {
			annotations: map[string]string{topology.AnnotationPodSetRequiredTopologyKueue: rackLabel, topology.AnnotationPodSetPreferredTopology: blockLabel},
			wantErr:     "kueue.x-k8s.io/podset-required-topology and koord-queue/podset-preferred-topology are both set: a pod set asks for a required or a preferred topology level, not both",
		},
		"an empty level is an error": {
			annotations: map[string]string{topology.AnnotationPodSetPreferredTopologyKueue: ""},
			wantErr:     "kueue.x-k8s.io/podset-preferred-topology is empty: it names the node label of a topology level",
		},
		"a level longer than any label key is an error, not quoted whole": {
			annotations: map[string]string{topology.AnnotationPodSetRequiredTopology: strings.Repeat("x", 1<<20)},
			wantErr:     "koord-queue/podset-required-topology is longer than 316 characters, the most a node label key has",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := topology.ParseAsk(tc.annotations)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("want error %q, got %v", tc.wantErr, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("want no error, got %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ask (-want +got):\n%s", diff)
			}
		})
	}
}

func TestResolveNamesTheLabelAndTheLevels(t *testing.T) {
	levels := topology.LevelsOf(&schedulingv1alpha1.Topology{ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: schedulingv1alpha1.TopologySpec{Levels: []schedulingv1alpha1.TopologyLevel{{NodeLabel: blockLabel}, {NodeLabel: rackLabel}, {NodeLabel: hostLabel}}}})
	if got, err := levels.Resolve(topology.Ask{Level: rackLabel, Required: true}); err != nil || got != 1 {
		t.Errorf("rack: want level 1, got %d, %v", got, err)
	}
	_, err := levels.Resolve(topology.Ask{Level: "example.com/" + strings.Repeat("z", 300), Required: true, Key: topology.AnnotationPodSetRequiredTopologyKueue})
	want := `kueue.x-k8s.io/podset-required-topology asks for topology level "example.com/zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz"…, which topology "default" does not have: its levels are ` +
		"cloud.provider.com/topology-block, cloud.provider.com/topology-rack, kubernetes.io/hostname"
	if err == nil || err.Error() != want {
		t.Errorf("want error %q, got %v", want, err)
	}
}

// FuzzParseAsk: any annotations are parsed without panic, and an error
// stays short whatever the tenant wrote.
func FuzzParseAsk(f *testing.F) {
	f.Add(rackLabel, "", "", "")
	f.Add(rackLabel, blockLabel, "", "")
	f.Add("", "", "\x00", strings.Repeat("é", 400))
	f.Fuzz(func(t *testing.T, a, b, c, d string) {
		annotations := map[string]string{}
		for key, v := range map[string]string{
			topology.AnnotationPodSetRequiredTopologyKueue: a, topology.AnnotationPodSetRequiredTopology: b,
			topology.AnnotationPodSetPreferredTopologyKueue: c, topology.AnnotationPodSetPreferredTopology: d,
		} {
			if v != "" {
				annotations[key] = v
			}
		}
		ask, err := topology.ParseAsk(annotations)
		if err != nil && len(err.Error()) > 400 {
			t.Errorf("error of %d bytes", len(err.Error()))
		}
		if err == nil && len(ask.Level) > 316 {
			t.Errorf("accepted a level of %d bytes", len(ask.Level))
		}
	})
}
