package cluster

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"time"
)

// RayOperatorOptions shape the KubeRay ray-operator a cluster runs. The zero
// value watches every namespace.
type RayOperatorOptions struct {
	// Namespace is the only namespace whose RayClusters, RayJobs and
	// RayServices (and their pods, Services and Jobs) the operator watches
	// (its --watch-namespace); every namespace when empty.
	Namespace string
	// StartTimeout bounds how long it may take to be ready (default 1 minute).
	StartTimeout time.Duration
}

// StartRayOperator runs KubeRay's ray-operator that hack/ensure-tools.sh
// builds (`make tools`) against the cluster, as a local process that Stop
// stops first, and waits until it answers its readiness probe. Install the
// ray.io CRDs first, RayService's too: the operator runs a RayService
// controller, and exits two minutes after starting without its CRD (its
// cache never syncs). It is not part of Start: only the tests that need it
// pay for it.
//
// Unlike the training-operator it needs nothing a Deployment would give it:
// its webhooks are off unless ENABLE_WEBHOOKS=true, so no certificate is
// needed.
func (c *Cluster) StartRayOperator(ctx context.Context, opts RayOperatorOptions) (*Process, error) {
	if opts.StartTimeout == 0 {
		opts.StartTimeout = time.Minute
	}
	bin, err := Tool("ray-operator")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	ports, err := FreePorts(2)
	if err != nil {
		return nil, err
	}
	p, err := c.StartProcess("ray-operator", bin,
		"--kubeconfig="+c.Kubeconfig,
		"--enable-leader-election=false",
		"--watch-namespace="+opts.Namespace,
		"--metrics-addr="+Loopback(ports[0]),
		"--health-probe-bind-address="+Loopback(ports[1]),
		"--log-stdout-encoder=console",
	)
	if err != nil {
		return nil, err
	}
	// /readyz answers once the operator's manager runs (its check is a
	// ping): its controllers may still be syncing their caches, which the
	// tests' waits for the objects it makes absorb. Only this process is
	// watched: a test may have stopped others on purpose.
	if err := waitForHTTP(ctx, "ray-operator /readyz", &http.Client{Timeout: 5 * time.Second}, "http://"+Loopback(ports[1])+"/readyz", p.Err); err != nil {
		return nil, fmt.Errorf("%w (log in %s)", err, filepath.Join(c.logDir, "ray-operator.log"))
	}
	return p, nil
}
