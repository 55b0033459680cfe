package api

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/test/cluster"
)

// TestKubectlWideShowsTheDomain: `kubectl get queueunits -o wide` shows,
// in its DOMAIN column, the domain of the unit's first pod set admitted to
// one (its levels' values from the top); a unit with several such pod sets
// shows its first one's, and a unit admitted to none nothing. Without -o
// wide the column is left out.
func TestKubectlWideShowsTheDomain(t *testing.T) {
	kubectl, err := cluster.Tool("kubectl")
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	assignment := func(podSet string, domains ...[]string) schedulingv1alpha1.PodSetTopologyAssignment {
		a := schedulingv1alpha1.PodSetTopologyAssignment{Name: podSet, Topology: "default",
			Levels: []string{"cloud.provider.com/topology-block", "cloud.provider.com/topology-rack"}}
		for _, values := range domains {
			a.Domains = append(a.Domains, schedulingv1alpha1.TopologyDomainAssignment{Values: values, Count: 2})
		}
		return a
	}
	cases := map[string]struct {
		podSets     []schedulingv1alpha1.PodSet
		assignments []schedulingv1alpha1.PodSetTopologyAssignment
		want        string
	}{
		"one pod set in one rack shows its block and rack": {
			podSets:     []schedulingv1alpha1.PodSet{podSet("main", 2)},
			assignments: []schedulingv1alpha1.PodSetTopologyAssignment{assignment("main", []string{"b1", "r3"})},
			want:        `["b1","r3"]`,
		},
		"several pod sets show the first one's domain": {
			podSets: []schedulingv1alpha1.PodSet{podSet("master", 1), podSet("worker", 4)},
			assignments: []schedulingv1alpha1.PodSetTopologyAssignment{
				assignment("master", []string{"b1", "r3"}),
				assignment("worker", []string{"b2", "r1"}, []string{"b2", "r2"}),
			},
			want: `["b1","r3"]`,
		},
		"a unit admitted to no domain shows nothing": {
			podSets: []schedulingv1alpha1.PodSet{podSet("main", 2)},
			want:    "",
		},
	}
	i := 0
	for name, tc := range cases {
		i++
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			u := validUnit(fmt.Sprint("domain-column-", i))
			u.Spec.PodSets = tc.podSets
			if err := env.Client.Create(ctx, u); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = env.Client.Delete(ctx, u) })
			if tc.assignments != nil {
				u.Status.TopologyAssignments = tc.assignments
				if err := env.Client.Status().Update(ctx, u); err != nil {
					t.Fatal(err)
				}
			}
			get := func(args ...string) map[string]string {
				t.Helper()
				args = append([]string{"--kubeconfig", kubeconfig, "get", "queueunits", "-n", u.Namespace, u.Name}, args...)
				out, err := exec.CommandContext(ctx, kubectl, args...).CombinedOutput()
				if err != nil {
					t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
				}
				t.Logf("kubectl %s:\n%s", strings.Join(args[2:], " "), out)
				return columns(t, string(out))
			}
			wide := get("-o", "wide")
			if got, ok := wide["DOMAIN"]; !ok {
				t.Errorf("kubectl get -o wide has no DOMAIN column: %v", wide)
			} else if got != tc.want {
				t.Errorf("kubectl get -o wide: DOMAIN %q, want %q (all columns: %v)", got, tc.want, wide)
			}
			if got, ok := get()["DOMAIN"]; ok {
				t.Errorf("kubectl get without -o wide shows DOMAIN %q", got)
			}
		})
	}
}

// columns reads kubectl's table of one row into a map from each header to
// its cell. Cells are found under their headers: kubectl aligns each
// column's cells with its header, and a header may hold no spaces.
func columns(t *testing.T, out string) map[string]string {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("kubectl printed %d lines, want a header and one row:\n%s", len(lines), out)
	}
	header, row := lines[0], lines[1]
	got := map[string]string{}
	fields := strings.Fields(header)
	starts := make([]int, len(fields))
	for j, at := range fields {
		from := 0
		if j > 0 {
			from = starts[j-1] + len(fields[j-1])
		}
		starts[j] = from + strings.Index(header[from:], at)
	}
	for j, name := range fields {
		end := len(row)
		if j+1 < len(fields) {
			end = min(starts[j+1], len(row))
		}
		got[name] = ""
		if starts[j] < end {
			got[name] = strings.TrimSpace(row[starts[j]:end])
		}
	}
	return got
}
