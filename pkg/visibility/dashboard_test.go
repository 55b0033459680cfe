package visibility

import (
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/admission"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
)

// renderDashboard serves src's dashboard and returns the page headless
// Chromium renders of it.
func renderDashboard(t *testing.T, src Source) string {
	t.Helper()
	browser, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("KOORD_QUEUE_SKIP_BROWSER") != "" {
			t.Skip("chromium not installed and KOORD_QUEUE_SKIP_BROWSER set")
		}
		t.Fatal("chromium not found: install Debian's chromium package (.ci/run does), or set KOORD_QUEUE_SKIP_BROWSER=1")
	}
	srv := httptest.NewServer(NewHandler(src, nil))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dom, err := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+t.TempDir(), "--virtual-time-budget=5000", "--dump-dom", srv.URL+"/").Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v", err)
	}
	return string(dom)
}

// TestDashboardShowsEachQueuesTree: the dashboard's queue table names each
// queue's quota tree by its pool (classic for the classic tree) and shows
// what the tree's units hold of its capacity (the classic tree's: the
// cluster's less the pools').
func TestDashboardShowsEachQueuesTree(t *testing.T) {
	c := admission.NewCache()
	c.UpsertNode(wrappers.Node("n1", "32", "64Gi"))
	c.UpsertElasticQuota(wrappers.MakeElasticQuota("a100", "kube-system").IsParent().
		Label(elasticquotav1alpha1.LabelQuotaTreeID, "t1").Label(elasticquotav1alpha1.LabelQuotaIsRoot, "true").
		Label(elasticquotav1alpha1.LabelQuotaProfile, "gpu-a100").
		Annotation(elasticquotav1alpha1.AnnotationTotalResource, `{"cpu":"8"}`).Obj())
	c.UpsertElasticQuota(wrappers.MakeElasticQuota("gpu-team", "gpu-team").Parent("a100").Label(elasticquotav1alpha1.LabelQuotaTreeID, "t1").Obj())
	c.UpsertElasticQuota(wrappers.MakeElasticQuota("cpu-team", "cpu-team").Max(corev1.ResourceCPU, "10").Obj())
	for _, name := range []string{"gpu-team", "cpu-team"} {
		c.UpsertQueue(&schedulingv1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Namespace: schedulingv1alpha1.QueueNamespace, Name: name}})
	}
	c.UpsertUnit(wrappers.MakeQueueUnit("job", "gpu-team").Quota("gpu-team").Request(corev1.ResourceCPU, "6").
		Phase(schedulingv1alpha1.Running).RunningAdmission(schedulingv1alpha1.DefaultPodSetName, 1, 1).Obj())

	page := renderDashboard(t, c)
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`data-loaded="true"`),
		regexp.MustCompile(`<tr data-queue="gpu-team">.*?<td class="tree" data-tree="gpu-a100" title="quota tree t1, root a100">gpu-a100</td><td class="tree-usage meta">cpu 6/8, memory 0/0, pods 0/0</td>`),
		regexp.MustCompile(`<tr data-queue="cpu-team">.*?<td class="tree" data-tree="" title="the classic tree, root koordinator-root-quota">classic</td><td class="tree-usage meta">cpu 0/24, memory 0/64Gi, pods 0/110</td>`),
	} {
		if !want.MatchString(page) {
			t.Errorf("the rendered dashboard lacks %s:\n%s", want, page)
		}
	}
}

// TestDashboardShowsDomains: the dashboard names the rack a recently
// admitted unit was admitted to, and shows each rack of a Topology with
// what is free of what its nodes offer, the pods of units admitted to it
// and not on a node yet counted as assumed.
func TestDashboardShowsDomains(t *testing.T) {
	c := racksCache(2, "r1", "r2")
	c.UpsertUnit(admittedToRack("team", "job", "r1", 3))

	page := renderDashboard(t, c)
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`data-loaded="true"`),
		regexp.MustCompile(`<tr data-admitted="team/job">.*?<td class="domain" data-domain="r1" title="pod set main: example.com/rack=r1 \(3 pods\)">r1</td></tr>`),
		regexp.MustCompile(`<div class="queue-block" data-topology="racks"><h3>racks: <select aria-label="level of racks"><option value="example.com/rack">`),
		regexp.MustCompile(`<tr data-domain="r1">.*?<div class="res" data-resource="cpu">.*?<span class="meta" title="held 0, assumed 3">1 free of 4</span>`),
		regexp.MustCompile(`<tr data-domain="r2">.*?<div class="res" data-resource="cpu">.*?<span class="meta" title="held 0, assumed 0">4 free of 4</span>`),
	} {
		if !want.MatchString(page) {
			t.Errorf("the rendered dashboard lacks %s:\n%s", want, page)
		}
	}
}
