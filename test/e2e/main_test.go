// Package e2e runs koord-queue's end-to-end tests on a whole local cluster:
// etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok fake
// nodes, so Jobs really create Pods that are scheduled, run and finish, with
// the koord-queue binary running against it as users run it.
package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/integrations"
	"github.com/koord-queue/koord-queue/test/cluster"
	"github.com/koord-queue/koord-queue/test/testenv"
)

var (
	localCluster *cluster.Cluster
	k8sClient    client.Client
	// koordQueue is the running koord-queue; visibilityURL its API.
	koordQueue    *cluster.Process
	koordQueueBin string
	visibilityURL string
	// extensions is the running koord-queue-controllers.
	extensions *cluster.Process
)

// podRunTime is how long a Job's pod runs on the fake nodes unless its
// template says otherwise.
const podRunTime = 5 * time.Second

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
	frameworkCRDs, err := testenv.FrameworkCRDDir()
	if err != nil {
		return err
	}
	if err := c.InstallCRDs(testenv.CRDDir(), frameworkCRDs); err != nil {
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
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: schedulingv1alpha1.QueueNamespace}}
	if err := k8sClient.Create(ctx, ns); err != nil {
		return err
	}
	if koordQueueBin, err = cluster.BuildBinary(ctx, "./cmd/queue", filepath.Join(c.Dir, "bin"), "koord-queue"); err != nil {
		return err
	}
	if koordQueue, err = startKoordQueue(); err != nil {
		return err
	}
	extBin, err := cluster.BuildBinary(ctx, "./cmd/extensions", filepath.Join(c.Dir, "bin"), "koord-queue-controllers")
	if err != nil {
		return err
	}
	metrics, err := freeAddress()
	if err != nil {
		return err
	}
	probes, err := freeAddress()
	if err != nil {
		return err
	}
	extensions, err = c.StartProcess("koord-queue-controllers", extBin, "--kubeconfig="+c.Kubeconfig, "--leader-elect=false",
		"--enabled-extensions="+strings.Join(integrations.Names(), ","), "--metrics-bind-address="+metrics, "--health-probe-bind-address="+probes)
	return err
}

// startKoordQueue runs the koord-queue binary against the cluster, as a
// user would, with its visibility API on a free loopback port.
func startKoordQueue() (*cluster.Process, error) {
	if visibilityURL == "" {
		addr, err := freeAddress()
		if err != nil {
			return nil, err
		}
		visibilityURL = "http://" + addr
	}
	metrics, err := freeAddress()
	if err != nil {
		return nil, err
	}
	probes, err := freeAddress()
	if err != nil {
		return nil, err
	}
	restarts++
	return localCluster.StartProcess(fmt.Sprintf("koord-queue-%d", restarts), koordQueueBin,
		"--kubeconfig="+localCluster.Kubeconfig, "--leader-elect=false",
		"--visibility-bind-address="+visibilityURL[len("http://"):],
		"--metrics-bind-address="+metrics, "--health-probe-bind-address="+probes,
		"--queue-status-refresh-interval=1s")
}

// restarts counts koord-queue starts, so each process logs to its own file.
var restarts int

func freeAddress() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}
