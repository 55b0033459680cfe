package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
	"github.com/koord-queue/koord-queue/pkg/extensions/integrations"
	"github.com/koord-queue/koord-queue/pkg/resources"
)

// teamAMax is the max of the seed's ElasticQuota team-a, which run-local
// applies: an example asking for more would wait forever.
var teamAMax = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi")}

// TestExamples: every example run-local prints is a job of a framework it
// runs, decoded strictly by the framework's own types, in quota team-a,
// submitted suspended, and small enough for team-a; and every file in
// examples/ is printed.
func TestExamples(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := integrations.AddToScheme(scheme, integrations.All()); err != nil {
		t.Fatal(err)
	}
	decoder := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
	var printed []string
	for _, op := range startableOperators() {
		printed = append(printed, op.examples...)
	}
	files, err := os.ReadDir(filepath.Base(examplesDir)) // tests run in this directory
	if err != nil {
		t.Fatal(err)
	}
	var onDisk []string
	for _, f := range files {
		onDisk = append(onDisk, f.Name())
	}
	slices.Sort(printed)
	if !slices.Equal(printed, onDisk) {
		t.Errorf("examples printed %v, files in %s %v: they must be the same", printed, examplesDir, onDisk)
	}
	for _, name := range onDisk {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(filepath.Base(examplesDir), name))
			if err != nil {
				t.Fatal(err)
			}
			_, gvk, err := decoder.Decode(data, nil, nil)
			if err != nil {
				t.Fatalf("decoding: %v", err)
			}
			integ := integrationOf(t, gvk.Kind)
			job := integ.NewJob()
			if _, _, err := decoder.Decode(data, nil, job.Object()); err != nil {
				t.Fatal(err)
			}
			if q := job.Object().GetLabels()[elasticquotav1alpha1.LabelQuotaName]; q != "team-a" {
				t.Errorf("quota label %q, want team-a", q)
			}
			if !job.IsSuspended() {
				t.Error("not submitted suspended")
			}
			sets, err := job.PodSets()
			if err != nil {
				t.Fatalf("pod sets: %v", err)
			}
			var podRequests []corev1.ResourceList
			var counts []int32
			for _, s := range sets {
				podRequests = append(podRequests, resources.PodRequests(&s.Template.Spec))
				counts = append(counts, s.Count)
			}
			total := resources.PodsRequests(podRequests, counts)
			for r, q := range total {
				if limit, ok := teamAMax[r]; !ok || q.Cmp(limit) > 0 {
					t.Errorf("asks for %s %s, more than team-a's max %v", r, q.String(), teamAMax)
				}
			}
		})
	}
}

func integrationOf(t *testing.T, kind string) framework.Integration {
	t.Helper()
	for _, integ := range integrations.All() {
		if integ.GVK.Kind == kind {
			return integ
		}
	}
	t.Fatalf("no extension for kind %s", kind)
	return framework.Integration{}
}
