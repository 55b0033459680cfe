package api

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
)

func topology(name string, labels ...string) *schedulingv1alpha1.Topology {
	t := &schedulingv1alpha1.Topology{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, l := range labels {
		t.Spec.Levels = append(t.Spec.Levels, schedulingv1alpha1.TopologyLevel{NodeLabel: l})
	}
	return t
}

func TestTopologyValidation(t *testing.T) {
	levels := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("example.com/level-%d", i)
		}
		return out
	}
	cases := map[string]struct {
		labels  []string
		wantErr string // empty: accepted
	}{
		"block, rack and host are accepted": {
			labels: []string{"cloud.provider.com/topology-block", "cloud.provider.com/topology-rack", "kubernetes.io/hostname"},
		},
		"one level is accepted": {
			labels: []string{"cloud.provider.com/topology-rack"},
		},
		"eight levels are accepted": {
			labels: levels(8),
		},
		"no level is refused": {
			labels:  nil,
			wantErr: "spec.levels: Required value",
		},
		"nine levels are refused": {
			labels:  levels(9),
			wantErr: "spec.levels: Too many: 9: must have at most 8 items",
		},
		"a label in two levels is refused": {
			labels:  []string{"example.com/rack", "example.com/host", "example.com/rack"},
			wantErr: "spec.levels: Invalid value: \"array\": each nodeLabel must appear in one level only",
		},
		"a key that is not a label key is refused": {
			labels:  []string{"example.com/rack", "Example.com/-host"},
			wantErr: "spec.levels[1].nodeLabel: Invalid value: \"Example.com/-host\": spec.levels[1].nodeLabel in body should match",
		},
		"an empty key is refused": {
			labels:  []string{""},
			wantErr: "spec.levels[0].nodeLabel: Invalid value: \"\": spec.levels[0].nodeLabel in body should be at least 1 chars long",
		},
		"a key longer than a label key may be is refused": {
			labels:  []string{strings.Repeat("a", 317)},
			wantErr: "spec.levels[0].nodeLabel: Too long: may not be",
		},
		"kubernetes.io/hostname above another level is refused": {
			labels:  []string{"kubernetes.io/hostname", "example.com/gpu-slot"},
			wantErr: "kubernetes.io/hostname can only be the last (narrowest) level",
		},
	}
	i := 0
	for name, tc := range cases {
		i++
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			topo := topology(fmt.Sprintf("topology-%d", i), tc.labels...)
			err := env.Client.Create(ctx, topo)
			checkErr(t, err, tc.wantErr)
			if err == nil {
				t.Cleanup(func() { _ = env.Client.Delete(ctx, topo) })
			}
		})
	}
}

// TestTopologyWithoutSpecIsRefused: a manifest with no spec at all.
func TestTopologyWithoutSpecIsRefused(t *testing.T) {
	raw := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "Topology",
		"metadata": map[string]any{"name": "no-spec"},
	}}
	checkErr(t, env.Client.Create(context.Background(), raw), "spec: Required value")
}

func TestTopologyLevelsAreImmutable(t *testing.T) {
	ctx := context.Background()
	topo := topology("immutable", "example.com/block", "example.com/rack")
	if err := env.Client.Create(ctx, topo); err != nil {
		t.Fatalf("create: %v", err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, topo) })

	changes := map[string]func(*schedulingv1alpha1.Topology){
		"a level renamed": func(t *schedulingv1alpha1.Topology) { t.Spec.Levels[1].NodeLabel = "example.com/host" },
		"a level added": func(t *schedulingv1alpha1.Topology) {
			t.Spec.Levels = append(t.Spec.Levels, schedulingv1alpha1.TopologyLevel{NodeLabel: "kubernetes.io/hostname"})
		},
		"a level removed": func(t *schedulingv1alpha1.Topology) { t.Spec.Levels = t.Spec.Levels[:1] },
		"levels reordered": func(t *schedulingv1alpha1.Topology) {
			t.Spec.Levels[0], t.Spec.Levels[1] = t.Spec.Levels[1], t.Spec.Levels[0]
		},
	}
	for name, change := range changes {
		t.Run(name+" is refused", func(t *testing.T) {
			changed := topo.DeepCopy()
			change(changed)
			checkErr(t, env.Client.Update(ctx, changed), "spec.levels: Invalid value: \"array\": levels are immutable: delete the topology and create it again")
		})
	}
	t.Run("a label added to the object is accepted", func(t *testing.T) {
		changed := topo.DeepCopy()
		changed.Labels = map[string]string{"team": "ml"}
		checkErr(t, env.Client.Update(ctx, changed), "")
	})
}
