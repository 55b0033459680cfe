package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/test/cluster"
	"github.com/koord-queue/koord-queue/test/testenv"
)

// TestDashboardInBrowser loads the dashboard in headless Chromium against
// the running koord-queue and checks what a person would see: the quota
// with its usage, the queue with its pending units in order and why they
// wait, and the recent admissions. The screenshot is kept under
// _output/e2e for people to look at.
func TestDashboardInBrowser(t *testing.T) {
	browser, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("KOORD_QUEUE_SKIP_BROWSER") != "" {
			t.Skip("chromium not installed and KOORD_QUEUE_SKIP_BROWSER set")
		}
		t.Fatal("chromium not found: install Debian's chromium package (.ci/run does), or set KOORD_QUEUE_SKIP_BROWSER=1")
	}
	ctx := context.Background()
	ns := "dashboard"
	create(t, namespaceObj(ns))
	create(t, wrappers.MakeElasticQuota("dash-team", ns).Min(corev1.ResourceCPU, "2").Max(corev1.ResourceCPU, "4").Obj())
	// dash-running declares it runs at most an hour: dash-first, next,
	// gets an estimate from that limit; dash-second, too big to run beside
	// dash-first, which declares nothing, gets none.
	running := wrappers.MakeQueueUnit("dash-running", ns).Quota("dash-team").Priority(5).Request(corev1.ResourceCPU, "3").Obj()
	running.Spec.MaximumExecutionTimeSeconds = ptr.To[int32](3600)
	create(t, running)
	testenv.Eventually(t, time.Minute, func(ctx context.Context) error {
		u, err := unitView(ctx, ns, "dash-running")
		if err != nil {
			return err
		}
		if u.Phase != schedulingv1alpha1.Dequeued {
			return fmt.Errorf("dash-running phase %s, want Dequeued", u.Phase)
		}
		return nil
	})
	create(t, wrappers.MakeQueueUnit("dash-first", ns).Quota("dash-team").Priority(5).Request(corev1.ResourceCPU, "2").Obj())
	create(t, wrappers.MakeQueueUnit("dash-second", ns).Quota("dash-team").Priority(1).Request(corev1.ResourceCPU, "3").Obj())
	testenv.Eventually(t, time.Minute, func(ctx context.Context) error {
		u, err := unitView(ctx, ns, "dash-first")
		if err != nil {
			return err
		}
		if !strings.Contains(u.Reason, "cpu") {
			return fmt.Errorf("dash-first reason %q, want it to explain cpu", u.Reason)
		}
		if u.EstimatedAdmissionTime == nil || u.EstimateBasis != "Declared" {
			return fmt.Errorf("dash-first estimate %v (%s), want one from dash-running's declared limit", u.EstimatedAdmissionTime, u.EstimateBasis)
		}
		return nil
	})

	out := filepath.Join(cluster.RepoRoot(), "_output", "e2e")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(out, "dashboard.png")
	// The API's certificate is signed by the test's own CA, which the
	// browser does not know.
	args := []string{"--headless", "--no-sandbox", "--ignore-certificate-errors", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(), "--window-size=1400,1000", "--virtual-time-budget=8000"}
	dom, err := exec.CommandContext(ctx, browser, append(args, "--dump-dom", visibilityURL+"/#token="+visibilityToken)...).Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v", err)
	}
	page := string(dom)
	for _, want := range []string{
		`data-loaded="true"`,
		`data-quota="dash-team"`,
		`data-queue="dash-team"`,
		`data-unit="dashboard/dash-first"`,
		`data-unit="dashboard/dash-second"`,
		"dash-team: cpu",
		"dashboard/dash-running",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the rendered dashboard lacks %q", want)
		}
	}
	// The queue view's Starts column: dash-first within the hour dash-running
	// may run, from a declared limit; dash-second unknown.
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?s)data-unit="dashboard/dash-first".*?<td class="estimate" data-estimate="[^"]+" data-basis="Declared" title="[^"]+">(in [0-9]+ min|in 1 h)<div class="meta">declared limits</div></td>`),
		regexp.MustCompile(`(?s)data-unit="dashboard/dash-second".*?<td class="estimate meta" data-estimate="unknown"[^>]*>unknown</td>`),
	} {
		if !want.MatchString(page) {
			t.Errorf("the rendered dashboard lacks %s", want)
		}
	}
	if first, second := strings.Index(page, `data-unit="dashboard/dash-first"`), strings.Index(page, `data-unit="dashboard/dash-second"`); first > second {
		t.Errorf("dash-first (priority 5) is listed after dash-second (priority 1)")
	}
	// Without a token the page loads but the API refuses it: the page asks
	// to sign in and shows no unit.
	anonymous, err := exec.CommandContext(ctx, browser, append(args, "--dump-dom", visibilityURL+"/")...).Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom without a token: %v", err)
	}
	if page := string(anonymous); !strings.Contains(page, "sign in with a bearer token") || strings.Contains(page, "dash-first") {
		t.Errorf("the dashboard without a token does not ask to sign in, or shows units:\n%s", page)
	}
	if err := exec.CommandContext(ctx, browser, append(args, "--screenshot="+shot, visibilityURL+"/#token="+visibilityToken)...).Run(); err != nil {
		t.Fatalf("chromium --screenshot: %v", err)
	}
	if info, err := os.Stat(shot); err != nil || info.Size() < 10_000 {
		t.Fatalf("screenshot %s: %v (size %d), want a real picture", shot, err, sizeOf(info))
	}
	t.Logf("dashboard screenshot: %s", shot)
}

func sizeOf(info os.FileInfo) int64 {
	if info == nil {
		return 0
	}
	return info.Size()
}
