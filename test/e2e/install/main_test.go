// Package install installs the Helm chart (every extension, the webhook, two
// replicas of each Deployment) on the local cluster of test/cluster and runs
// the locally built binaries as its Deployments would run them: the rendered
// args and env, the chart's ServiceAccounts' tokens, its mounted files, its
// Lease names, its probes, its webhook Service. It has its own cluster
// because the chart's MutatingWebhookConfiguration (every namespace but
// koord-queue) would meet the jobs of the other e2e tests.
//
// No container runtime runs here, so the images are not run: kwok would only
// fake the Deployments' pods (Running, never executing a binary), so the
// Deployments are applied with zero replicas and their pod templates are run
// as local processes instead.
package install

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/koord-queue/koord-queue/pkg/extensions/integrations"
	"github.com/koord-queue/koord-queue/test/cluster"
	"github.com/koord-queue/koord-queue/test/testenv"
)

var (
	localCluster *cluster.Cluster
	k8sClient    client.Client
	clientset    *kubernetes.Clientset
	// binaries maps a Deployment's container name to the local binary its
	// image's entrypoint is.
	binaries = map[string]string{}
)

// releaseNamespace is the namespace the chart is installed into, as `helm
// install -n queue-system` would: not the Queues' namespace (the chart's
// queueNamespace, koord-queue), which the chart then creates.
const releaseNamespace = "queue-system"

// podRunTime is how long a Job's pod runs on the fake nodes.
const podRunTime = 3 * time.Second

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx := context.Background()
	c, err := cluster.Start(ctx, cluster.Options{Nodes: 2, PodRunTime: podRunTime})
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting local cluster: %v\n", err)
		if c != nil {
			fmt.Fprintln(os.Stderr, c.Logs(40))
		}
		return 1
	}
	localCluster = c
	code := 1
	if err := setUp(ctx, c); err != nil {
		fmt.Fprintf(os.Stderr, "setting up: %v\n", err)
	} else {
		code = m.Run()
	}
	if code != 0 {
		fmt.Fprintf(os.Stderr, "tests failed; logs of every process kept in %s\n%s", c.LogDir(), c.Logs(30))
	}
	c.Stop(code != 0)
	return code
}

func setUp(ctx context.Context, c *cluster.Cluster) error {
	// The frameworks' CRDs stand for their operators, so that every
	// extension the chart turns on finds its kind.
	frameworkCRDs, err := testenv.FrameworkCRDDir()
	if err != nil {
		return err
	}
	if err := c.InstallCRDs(frameworkCRDs); err != nil {
		return err
	}
	scheme, err := testenv.NewScheme()
	if err != nil {
		return err
	}
	if err := integrations.AddToScheme(scheme, integrations.All()); err != nil {
		return err
	}
	if k8sClient, err = client.New(c.Config, client.Options{Scheme: scheme}); err != nil {
		return err
	}
	if clientset, err = kubernetes.NewForConfig(c.Config); err != nil {
		return err
	}
	for container, pkg := range map[string]string{"koord-queue": "./cmd/queue", "koord-queue-controllers": "./cmd/extensions"} {
		if binaries[container], err = cluster.BuildBinary(ctx, pkg, filepath.Join(c.Dir, "bin"), container); err != nil {
			return err
		}
	}
	return nil
}
