// Command run-local shows koord-queue working on a local cluster it starts
// itself: etcd, kube-apiserver, kube-controller-manager, kube-scheduler and
// kwok fake nodes on loopback, with koord-queue and koord-queue-controllers
// running as local processes and every extension on. It applies the
// Koord-Queue documentation's example (ElasticQuota team-a, max 4 CPU / 8Gi,
// and two 4-CPU Jobs), shows the second Job waiting and then running after
// the first through the visibility API; then it builds (once) and starts the
// framework operators the tests run (the Kubeflow training-operator,
// KubeRay's ray-operator, the Argo workflow-controller), so a TFJob, a
// RayCluster or a Workflow can be tried on it too (examples/). It stays up
// until Ctrl-C, when it stops everything and exits 0.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/integrations"
	"github.com/koord-queue/koord-queue/pkg/visibility"
	"github.com/koord-queue/koord-queue/pkg/visibility/api"
	"github.com/koord-queue/koord-queue/test/cluster"
	"github.com/koord-queue/koord-queue/test/seeds"
	"github.com/koord-queue/koord-queue/test/testenv"
)

const (
	// examplesDir holds a job of each framework, relative to the
	// repository's root, where `make run-local` runs.
	examplesDir    = "hack/run-local/examples"
	visibilityAddr = "127.0.0.1:8090"
	metricsAddr    = "127.0.0.1:10259"
)

func main() {
	dir := flag.String("dir", filepath.Join(os.TempDir(), "koord-queue-local"), "directory for the cluster's certificates, data, binaries and logs")
	nodes := flag.Int("nodes", 4, "number of kwok fake nodes (32 CPU each)")
	podRunTime := flag.Duration("pod-run-time", 20*time.Second, "how long a Job's pod runs on a fake node")
	flag.Parse()
	if err := run(*dir, *nodes, *podRunTime); err != nil {
		fmt.Fprintf(os.Stderr, "run-local: %v\n", err)
		os.Exit(1)
	}
}

func step(format string, args ...any) { fmt.Printf("==> "+format+"\n", args...) }

func run(dir string, nodes int, podRunTime time.Duration) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("cleaning %s: %w", dir, err)
	}
	binDir := filepath.Join(dir, "bin")
	step("Building koord-queue and koord-queue-controllers")
	queueBin, err := cluster.BuildBinary(ctx, "./cmd/queue", binDir, "koord-queue")
	if err != nil {
		return err
	}
	extBin, err := cluster.BuildBinary(ctx, "./cmd/extensions", binDir, "koord-queue-controllers")
	if err != nil {
		return err
	}

	step("Starting etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok (%d nodes)", nodes)
	c, err := cluster.Start(ctx, cluster.Options{Dir: filepath.Join(dir, "cluster"), Nodes: nodes, PodRunTime: podRunTime})
	if err != nil {
		return err
	}
	defer func() {
		step("Stopping everything")
		c.Stop(true)
	}()
	frameworkCRDs, err := testenv.FrameworkCRDDir()
	if err != nil {
		return err
	}
	defer os.RemoveAll(frameworkCRDs)
	if err := c.InstallCRDs(testenv.CRDDir(), frameworkCRDs); err != nil {
		return err
	}
	scheme, err := testenv.NewScheme()
	if err != nil {
		return err
	}
	k8s, err := client.New(c.Config, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: schedulingv1alpha1.QueueNamespace}}
	if err := k8s.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", ns.Name, err)
	}

	// The visibility API serves HTTPS with a certificate of a CA of its
	// own, whose ca.crt lies beside it for curl and this program's client.
	visibilityCerts := filepath.Join(dir, "visibility-certs")
	if err := os.MkdirAll(visibilityCerts, 0o700); err != nil {
		return err
	}
	caPEM, err := cluster.WriteServingCert(visibilityCerts)
	if err != nil {
		return err
	}
	visibilityCA := filepath.Join(visibilityCerts, "ca.crt")
	if err := os.WriteFile(visibilityCA, caPEM, 0o600); err != nil {
		return err
	}

	step("Starting koord-queue and koord-queue-controllers")
	queueProc, err := c.StartProcess("koord-queue", queueBin, "--kubeconfig="+c.Kubeconfig, "--leader-elect=false",
		"--visibility-bind-address="+visibilityAddr, "--visibility-cert-dir="+visibilityCerts, "--visibility-insecure-allow-unauthenticated",
		"--metrics-bind-address="+metricsAddr, "--metrics-secure=false",
		"--health-probe-bind-address=127.0.0.1:10258", "--queue-status-refresh-interval=2s")
	if err != nil {
		return err
	}
	extProc, err := c.StartProcess("koord-queue-controllers", extBin, "--kubeconfig="+c.Kubeconfig, "--leader-elect=false",
		"--enabled-extensions="+strings.Join(integrations.Names(), ","), "--metrics-bind-address=127.0.0.1:8080", "--metrics-secure=false", "--health-probe-bind-address=127.0.0.1:8081")
	if err != nil {
		return err
	}
	step("Applying the Koord-Queue example: ElasticQuota team-a (max 4 CPU / 8Gi) and two 4-CPU Jobs")
	for _, file := range []string{"004-elastic-quota.yaml", "004-jobs.yaml"} {
		objs, err := seeds.Objects(file)
		if err != nil {
			return err
		}
		for _, o := range objs {
			if err := k8s.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("applying %s %s: %w", o.GetKind(), o.GetName(), err)
			}
			fmt.Printf("    created %s %s/%s\n", o.GetKind(), o.GetNamespace(), o.GetName())
		}
	}

	step("Watching queue team-a through the visibility API (pods run %s on kwok nodes)", podRunTime)
	if err := watchExample(ctx, caPEM, queueProc, extProc); err != nil {
		return err
	}
	fmt.Printf(`
koord-queue is running. Try it:
  export KUBECONFIG=%s
  kubectl get queueunits -A            (kubectl: %s)
  dashboard:       https://%s/   (signed by run-local's own CA: accept it in the browser)
  visibility API:  curl --cacert %s https://%s/api/queues
  metrics:         http://%s/metrics
  logs:            %s
`, c.Kubeconfig, filepath.Join(cluster.BinDir(), "kubectl"), visibilityAddr, visibilityCA, visibilityAddr, metricsAddr, c.LogDir())

	// The operators only run the other frameworks' pods: built (the first
	// time, several minutes) and started after the example, so that it
	// shows as soon as the cluster is up.
	step("Building and starting the framework operators for the other examples: Kubeflow training-operator, KubeRay ray-operator, Argo workflow-controller")
	if err := buildOperators(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		fmt.Fprintf(os.Stderr, "    the operators were not built (jobs of their frameworks are queued and released, but nothing runs their pods): %v\n", err)
	} else {
		fmt.Println(examples(startOperators(ctx, c)))
	}
	fmt.Println("Press Ctrl-C to stop everything.")
	<-ctx.Done()
	return nil
}

// buildOperators builds the framework operators into the tools' cache (a
// no-op once they are there), its progress on stderr.
func buildOperators(ctx context.Context) error {
	cmd := exec.CommandContext(ctx, "bash", "hack/ensure-tools.sh", "operators")
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("hack/ensure-tools.sh operators: %w", err)
	}
	return nil
}

// operator is a framework operator run-local starts, and the example it runs.
type operator struct {
	name     string
	examples []string // under hack/run-local/examples
	start    func(context.Context, *cluster.Cluster) error
	err      error
}

// startOperators starts each operator on c. One that fails to start is
// reported and left out: the queue itself works without it.
func startOperators(ctx context.Context, c *cluster.Cluster) []*operator {
	ops := startableOperators()
	for _, op := range ops {
		if op.err = op.start(ctx, c); op.err != nil {
			fmt.Fprintf(os.Stderr, "    %s not started (its jobs are queued and released, but nothing runs their pods): %v\n", op.name, op.err)
		}
	}
	return ops
}

// startableOperators are the operators run-local runs, not yet started.
func startableOperators() []*operator {
	return []*operator{
		{name: "Kubeflow training-operator", examples: []string{"tfjob.yaml", "pytorchjob.yaml"}, start: func(ctx context.Context, c *cluster.Cluster) error {
			_, err := c.StartTrainingOperator(ctx, cluster.TrainingOperatorOptions{Schemes: []string{"tfjob", "pytorchjob", "mpijob"}})
			return err
		}},
		{name: "KubeRay ray-operator", examples: []string{"raycluster.yaml"}, start: func(ctx context.Context, c *cluster.Cluster) error {
			_, err := c.StartRayOperator(ctx, cluster.RayOperatorOptions{})
			return err
		}},
		{name: "Argo workflow-controller", examples: []string{"workflow.yaml"}, start: func(ctx context.Context, c *cluster.Cluster) error {
			_, err := c.StartWorkflowController(ctx, cluster.WorkflowControllerOptions{Namespace: metav1.NamespaceDefault})
			return err
		}},
	}
}

// examples are the lines that show how to try each framework.
func examples(ops []*operator) string {
	var b strings.Builder
	b.WriteString("Try a framework (in quota team-a, namespace default):\n")
	for _, op := range ops {
		for _, e := range op.examples {
			if op.err == nil {
				fmt.Fprintf(&b, "  kubectl create -f %-40s (%s)\n", filepath.Join(examplesDir, e), op.name)
			}
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// watchExample prints the example's units as their place changes, until
// both have been admitted. caPEM signs the visibility API's certificate.
func watchExample(ctx context.Context, caPEM []byte, procs ...*cluster.Process) error {
	httpClient, err := visibility.HTTPClientTrusting(caPEM)
	if err != nil {
		return err
	}
	api := &visibility.Client{BaseURL: "https://" + visibilityAddr, HTTP: httpClient}
	seen := map[string]bool{}
	last := ""
	return wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, p := range procs {
			if err := p.Err(); err != nil {
				return false, err
			}
		}
		list, err := api.QueueUnits(ctx, "team-a", "", 0, 0)
		if err != nil {
			return false, nil // not up yet
		}
		var lines []string
		for _, u := range list.Items {
			lines = append(lines, describe(u))
			if u.Phase != schedulingv1alpha1.Enqueued {
				seen[u.Name] = true
			}
		}
		if now := strings.Join(lines, "\n"); now != last && now != "" {
			fmt.Printf("[%s]\n%s\n", time.Now().Format("15:04:05"), now)
			last = now
		}
		return seen["my-job"] && seen["my-job-blocked"], nil
	})
}

func describe(u api.UnitView) string {
	s := fmt.Sprintf("    %-16s %-9s", u.Name, u.Phase)
	if u.Reason != "" {
		s += " waits: " + u.Reason
	}
	return s
}
