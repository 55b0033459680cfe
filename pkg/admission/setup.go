package admission

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	quotav1alpha1 "github.com/koord-queue/koord-queue/apis/quota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/watched"
)

// ErrNoProfileCRD: ComputeTreeCapacity is on, and the cluster does not
// serve ElasticQuotaProfiles.
var ErrNoProfileCRD = errors.New("--compute-tree-capacity (chart value computeTreeCapacity) reads ElasticQuotaProfiles, " +
	"and the cluster has no CRD elasticquotaprofiles.quota.koordinator.sh: install Koordinator's, " +
	"or set the chart value installElasticQuotaProfileCRD: true")

// Options configure admission.
type Options struct {
	Writer WriterOptions
	// Clock is the wall clock; tests may inject another.
	Clock clock.WithTicker
	// ReclaimProtection keeps units admitted more recently from being
	// reclaimed by other quotas (defaultReclaimProtectTime).
	ReclaimProtection time.Duration
	// QueueNamespace holds the Queues (empty:
	// schedulingv1alpha1.QueueNamespace); Queues elsewhere are not read.
	QueueNamespace string
	// ComputeTreeCapacity: where no koord-manager writes the quota tree
	// roots' total-resource annotation, each root's capacity is computed
	// from the ElasticQuotaProfile naming it and the nodes its selector
	// chooses, and overrides the annotation.
	ComputeTreeCapacity bool
	// ProcessStart is when the process started, for the log line that
	// says where a leader's start went; zero leaves that phase out.
	ProcessStart time.Time
}

// Setup feeds a new Cache from the manager's informers (on every replica)
// and adds the leader's scheduling loop. It returns the Cache for the
// visibility API and the Queue status writer (pkg/queue).
func Setup(ctx context.Context, mgr manager.Manager, opts Options) (*Cache, error) {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	c := NewCache()
	c.forecasts.now, c.forecasts.showEstimates = opts.Clock.Now, true
	c.domainViews.now = opts.Clock.Now
	if opts.QueueNamespace != "" {
		c.views.queueNamespace = opts.QueueNamespace
	}
	c.treeCapacities.computeTrees = opts.ComputeTreeCapacity
	c.log = mgr.GetLogger().WithName("admission")
	c.core.SetReclaimProtection(opts.ReclaimProtection)
	var listed, synced []toolscache.InformerSynced
	feed := func(obj client.Object, upsert func(any), remove func(any)) error {
		informer, err := mgr.GetCache().GetInformer(ctx, obj)
		if err != nil {
			return fmt.Errorf("getting informer for %T: %w", obj, err)
		}
		reg, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    upsert,
			UpdateFunc: func(_, obj any) { upsert(obj) },
			DeleteFunc: func(obj any) {
				if tombstone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
					obj = tombstone.Obj
				}
				remove(obj)
			},
		})
		if err != nil {
			return fmt.Errorf("watching %T: %w", obj, err)
		}
		listed, synced = append(listed, informer.HasSynced), append(synced, reg.HasSynced)
		return nil
	}
	handlers := []struct {
		obj            client.Object
		upsert, remove func(any)
	}{
		{&elasticquotav1alpha1.ElasticQuota{},
			func(o any) {
				if eq, ok := o.(*elasticquotav1alpha1.ElasticQuota); ok {
					c.UpsertElasticQuota(eq)
				}
			},
			func(o any) {
				if eq, ok := o.(*elasticquotav1alpha1.ElasticQuota); ok {
					c.DeleteElasticQuota(eq.Namespace, eq.Name)
				}
			}},
		{&schedulingv1alpha1.Queue{},
			func(o any) {
				if q, ok := o.(*schedulingv1alpha1.Queue); ok && q.Namespace == c.views.queueNamespace {
					c.UpsertQueue(q)
				}
			},
			func(o any) {
				if q, ok := o.(*schedulingv1alpha1.Queue); ok && q.Namespace == c.views.queueNamespace {
					c.DeleteQueue(q.Name)
				}
			}},
		{&schedulingv1alpha1.QueueUnit{},
			func(o any) {
				if u, ok := o.(*schedulingv1alpha1.QueueUnit); ok {
					c.UpsertUnit(u)
				}
			},
			func(o any) {
				if u, ok := o.(*schedulingv1alpha1.QueueUnit); ok {
					c.DeleteUnit(u.Namespace, u.Name)
				}
			}},
		{&schedulingv1alpha1.Topology{},
			func(o any) {
				if t, ok := o.(*schedulingv1alpha1.Topology); ok {
					c.UpsertTopology(t)
				}
			},
			func(o any) {
				if t, ok := o.(*schedulingv1alpha1.Topology); ok {
					c.DeleteTopology(t.Name)
				}
			}},
		{&corev1.Node{},
			func(o any) {
				if n, ok := o.(*corev1.Node); ok {
					c.UpsertNode(n)
				}
			},
			func(o any) {
				if n, ok := o.(*corev1.Node); ok {
					c.DeleteNode(n.Name)
				}
			}},
	}
	// ElasticQuotaProfiles are read whenever the cluster serves them: they
	// are the node pools the Placer counts (and, with ComputeTreeCapacity,
	// the trees' capacities). Without their CRD there are no pools.
	handlers = append(handlers, struct {
		obj            client.Object
		upsert, remove func(any)
	}{&quotav1alpha1.ElasticQuotaProfile{},
		func(o any) {
			if p, ok := o.(*quotav1alpha1.ElasticQuotaProfile); ok {
				c.treeCapacities.UpsertElasticQuotaProfile(p)
			}
		},
		func(o any) {
			if p, ok := o.(*quotav1alpha1.ElasticQuotaProfile); ok {
				c.treeCapacities.DeleteElasticQuotaProfile(p.Namespace, p.Name)
			}
		}})
	for _, h := range handlers {
		if err := feed(h.obj, h.upsert, h.remove); err != nil {
			if apimeta.IsNoMatchError(err) {
				switch h.obj.(type) {
				case *quotav1alpha1.ElasticQuotaProfile:
					if !opts.ComputeTreeCapacity {
						c.log.Info("The cluster has no CRD elasticquotaprofiles.quota.koordinator.sh: no node pools; restart koord-queue once it is installed")
						continue
					}
					return nil, fmt.Errorf("%w: %w", ErrNoProfileCRD, err)
				case *elasticquotav1alpha1.ElasticQuota:
					return nil, watched.NoElasticQuotaCRD(err)
				}
			}
			return nil, err
		}
	}
	pods, err := NewPodFeed(mgr.GetConfig(), c)
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(pods); err != nil {
		return nil, fmt.Errorf("adding the pods' feed: %w", err)
	}
	listed, synced = append(listed, pods.HasSynced), append(synced, pods.HasSynced)
	c.mu.Lock()
	c.views.synced = synced
	c.mu.Unlock()
	recorder := mgr.GetEventRecorderFor("koord-queue")
	writer := NewWriter(mgr.GetClient(), mgr.GetAPIReader(), recorder, c, opts.Clock, opts.Writer)
	if err := mgr.Add(&Loop{cache: c, writer: writer, clock: opts.Clock, synced: watchSync(ctx, opts.Clock, listed, synced), log: c.log, processStart: opts.ProcessStart}); err != nil {
		return nil, fmt.Errorf("adding the scheduling loop: %w", err)
	}
	if err := mgr.Add(&leaderExporter{registry: ctrlmetrics.Registry, collector: &forecastCollector{forecasts: &c.forecasts, now: opts.Clock.Now}, synced: synced}); err != nil {
		return nil, fmt.Errorf("adding the forecast's metrics: %w", err)
	}
	if err := mgr.Add(&leaderExporter{registry: ctrlmetrics.Registry, collector: &v18Collector{counts: &c.jobTypeCounts}, synced: synced}); err != nil {
		return nil, fmt.Errorf("adding Koord-Queue v1.8's metrics: %w", err)
	}
	if err := mgr.Add(&leaderExporter{registry: ctrlmetrics.Registry, collector: &queueCountsCollector{views: &c.views}, synced: synced}); err != nil {
		return nil, fmt.Errorf("adding the queues' metrics: %w", err)
	}
	return c, nil
}
