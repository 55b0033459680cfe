// Package runner plays the job extension for the performance harness: each
// unit koord-queue admits "runs" for the time its label says, then is marked
// Succeed with its admissions cleared, so its quota is released. A unit
// evicted before its time is up is not finished; when it is admitted again,
// its run starts over.
package runner

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/test/performance/kube"
)

// LabelRuntime on a generated unit is how long it runs once admitted, in milliseconds.
const LabelRuntime = "perf.koord-queue.io/runtime-ms"

// workers write finished units' status in parallel.
const workers = 16

// Runner finishes admitted units after their runtime.
type Runner struct {
	client   client.Client
	informer toolscache.SharedIndexInformer
	queue    workqueue.TypedDelayingInterface[run]

	mu sync.Mutex
	// running maps a unit to the admission (its status.attempts) whose run
	// is scheduled, so each admission runs once.
	running map[string]int64
}

// run is one admission of one unit.
type run struct {
	key     string
	attempt int64
}

// New returns a Runner fed by inf and writing through c.
func New(c client.Client, inf toolscache.SharedIndexInformer) (*Runner, error) {
	r := &Runner{
		client:   c,
		informer: inf,
		queue:    workqueue.NewTypedDelayingQueue[run](),
		running:  map[string]int64{},
	}
	_, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    r.observe,
		UpdateFunc: func(_, obj any) { r.observe(obj) },
	})
	if err != nil {
		return nil, fmt.Errorf("watching QueueUnits: %w", err)
	}
	return r, nil
}

// observe schedules the end of a newly admitted unit's run.
func (r *Runner) observe(obj any) {
	u, ok := kube.UnitOf(obj)
	if !ok || !running(u) {
		return
	}
	key := u.Namespace + "/" + u.Name
	r.mu.Lock()
	attempt, scheduled := r.running[key]
	if scheduled && attempt == u.Status.Attempts {
		r.mu.Unlock()
		return
	}
	r.running[key] = u.Status.Attempts
	r.mu.Unlock()
	ms, _ := strconv.Atoi(u.Labels[LabelRuntime])
	r.queue.AddAfter(run{key: key, attempt: u.Status.Attempts}, time.Duration(ms)*time.Millisecond)
}

// running: admitted with no admission check pending, so its job would run.
func running(u *schedulingv1alpha1.QueueUnit) bool {
	p := u.Status.Phase
	return (p == schedulingv1alpha1.Dequeued || p == schedulingv1alpha1.Running) && len(u.Status.Admissions) > 0
}

// Run finishes units until ctx ends.
func (r *Runner) Run(ctx context.Context) {
	log := logr.FromContextOrDiscard(ctx).WithName("runner")
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				item, shutdown := r.queue.Get()
				if shutdown {
					return
				}
				if err := r.finish(ctx, item); err != nil && ctx.Err() == nil {
					log.Error(err, "Finishing unit", "queueUnit", item.key)
				}
				r.queue.Done(item)
			}
		})
	}
	<-ctx.Done()
	r.queue.ShutDown()
	wg.Wait()
}

// finish marks the unit Succeed and releases its quota, unless it was
// evicted (or admitted again) since this run started.
func (r *Runner) finish(ctx context.Context, item run) error {
	obj, exists, err := r.informer.GetStore().GetByKey(item.key)
	if err != nil || !exists {
		return err
	}
	u := obj.(*schedulingv1alpha1.QueueUnit)
	for {
		if !running(u) || u.Status.Attempts != item.attempt {
			return nil // evicted or re-admitted meanwhile: that admission runs anew
		}
		done := u.DeepCopy()
		done.Status.Phase = schedulingv1alpha1.Succeed
		done.Status.Admissions = nil
		done.Status.Message = "finished (performance runner)"
		err := r.client.Status().Patch(ctx, done, client.MergeFromWithOptions(u, client.MergeFromWithOptimisticLock{}))
		if !apierrors.IsConflict(err) {
			return client.IgnoreNotFound(err)
		}
		fresh := &schedulingv1alpha1.QueueUnit{}
		if err := r.client.Get(ctx, client.ObjectKeyFromObject(u), fresh); err != nil {
			return client.IgnoreNotFound(err)
		}
		u = fresh
	}
}
