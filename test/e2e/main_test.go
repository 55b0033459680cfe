// Package e2e runs koord-queue's end-to-end tests on a whole local cluster:
// etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok fake
// nodes, so Jobs really create Pods that are scheduled, run and finish.
package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/koord-queue/koord-queue/test/cluster"
)

var localCluster *cluster.Cluster

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	c, err := cluster.Start(context.Background(), cluster.Options{Nodes: 2})
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting local cluster: %v\n", err)
		if c != nil {
			fmt.Fprintln(os.Stderr, c.Logs(40))
		}
		return 1
	}
	localCluster = c
	code := m.Run()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "tests failed; cluster logs kept in %s\n%s", c.LogDir(), c.Logs(30))
	}
	c.Stop(code != 0)
	return code
}
