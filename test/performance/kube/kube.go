// Package kube holds what the performance harness's parts share to talk to
// the API server: a scheme, clients with a budget large enough that the
// harness is never the bottleneck, and a QueueUnit informer.
package kube

import (
	"context"
	"fmt"
	"net"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/test/testenv"
)

// HarnessQPS and HarnessBurst are each harness client's budget: far above
// what koord-queue is given, so only koord-queue's budget limits a run.
const (
	HarnessQPS   = 5000
	HarnessBurst = 10000
)

// Client returns a client of its own (own connection and rate limiter) for
// one part of the harness, named in the API server's logs by userAgent.
func Client(cfg *rest.Config, userAgent string) (client.WithWatch, error) {
	return ClientWithBudget(cfg, userAgent, HarnessQPS, HarnessBurst)
}

// ClientWithBudget is Client with its rate limiter set to qps and burst.
func ClientWithBudget(cfg *rest.Config, userAgent string, qps float32, burst int) (client.WithWatch, error) {
	cfg = ConfigFor(cfg, userAgent, qps, burst)
	scheme, err := testenv.NewScheme()
	if err != nil {
		return nil, fmt.Errorf("building scheme: %w", err)
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("building %s client: %w", userAgent, err)
	}
	return c, nil
}

// ConfigFor is cfg for a client with its own budget and its own
// connection. client-go shares one transport, so one HTTP/2 connection,
// among clients with the same TLS settings; a dialer of its own keeps the
// client off it. On a shared one the runner's watch fell up to 1.5 s behind
// while the generator created units, and units held their quota that much
// longer.
func ConfigFor(cfg *rest.Config, userAgent string, qps float32, burst int) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst, cfg.UserAgent = qps, burst, userAgent
	cfg.Dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	return cfg
}

// UnitInformer lists and watches every QueueUnit in every namespace
// through c.
func UnitInformer(c client.WithWatch) toolscache.SharedIndexInformer {
	return toolscache.NewSharedIndexInformer(UnitListWatch(c), &schedulingv1alpha1.QueueUnit{}, 0, toolscache.Indexers{})
}

// UnitListWatch lists and watches every QueueUnit through c.
func UnitListWatch(c client.WithWatch) *toolscache.ListWatch {
	return &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (k8sruntime.Object, error) {
			list := &schedulingv1alpha1.QueueUnitList{}
			err := c.List(ctx, list, &client.ListOptions{Raw: &opts})
			return list, err
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return c.Watch(ctx, &schedulingv1alpha1.QueueUnitList{}, &client.ListOptions{Raw: &opts})
		},
	}
}

// RunInformer starts an informer and waits until it has listed.
func RunInformer(ctx context.Context, inf toolscache.SharedIndexInformer) error {
	go inf.RunWithContext(ctx)
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if !toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return fmt.Errorf("QueueUnit informer did not sync: %w", ctx.Err())
	}
	return nil
}

// UnitOf unwraps an informer event's object.
func UnitOf(obj any) (*schedulingv1alpha1.QueueUnit, bool) {
	if tombstone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	u, ok := obj.(*schedulingv1alpha1.QueueUnit)
	return u, ok
}
