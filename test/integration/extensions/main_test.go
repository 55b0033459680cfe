// Package extensions tests koord-queue-controllers against a real
// kube-apiserver: one API server and one manager running every extension
// and the webhook, shared by all tests, each test in its own namespace.
// The tests play both other parties: the queue controller (they admit and
// evict units by writing their status) and each framework's controller (they
// write the jobs' status). No framework controller runs.
//
// The frameworks' CRDs are copied at run time from the Go module cache, from
// the very module versions go.mod pins (testenv.FrameworkCRDDir); nothing is
// downloaded.
package extensions

import (
	"context"
	"fmt"
	"os"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/koord-queue/koord-queue/test/testenv"
)

var (
	env *testenv.Env
	// k8s reads and writes around any cache.
	k8s client.Client
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	// testenv sends the controllers' logs to stderr when
	// KOORD_QUEUE_TEST_LOG is set.
	crds, err := testenv.FrameworkCRDDir()
	if err != nil {
		fmt.Fprintf(os.Stderr, "extensions: %v\n", err)
		return 1
	}
	defer os.RemoveAll(crds)
	if env, err = testenv.Start(crds); err != nil {
		fmt.Fprintf(os.Stderr, "extensions: %v\n", err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "extensions: stopping the API server: %v\n", err)
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	stop, err := startControllers(ctx)
	if err != nil {
		cancel()
		fmt.Fprintf(os.Stderr, "extensions: %v\n", err)
		return 1
	}
	code := m.Run()
	cancel()
	stop()
	return code
}
