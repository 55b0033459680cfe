package admission

import (
	"context"
	"fmt"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/resources"
)

// The pods reach the Cache through a reflector whose store is the pod
// ledger itself (podStore): no informer keeps a copy of every pod, and each
// pod is cut to what the ledger reads (SlimPod) as it is decoded, so that
// a list of many pods holds no more than that while it is read.

// PodFeed lists and watches every pod into a Cache, on every replica.
type PodFeed struct {
	reflector *toolscache.Reflector
	store     *podStore
}

var (
	_ manager.Runnable               = (*PodFeed)(nil)
	_ manager.LeaderElectionRunnable = (*PodFeed)(nil)
)

// NewPodFeed returns the feed of c's pods from the API server config
// reaches; Setup adds one to the manager.
func NewPodFeed(config *rest.Config, c *Cache) (*PodFeed, error) {
	// Pods are read as protocol buffers, as controller-runtime's clients
	// read built-in kinds: every event of every pod is decoded, and JSON
	// costs several times the CPU.
	config = rest.CopyConfig(config)
	config.ContentType = runtime.ContentTypeProtobuf
	config.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	clientset, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("making the pods' client: %w", err)
	}
	pods := clientset.CoreV1().Pods(metav1.NamespaceAll)
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			list, err := pods.List(ctx, opts)
			if err != nil {
				return nil, err
			}
			for i := range list.Items {
				list.Items[i] = *SlimPod(&list.Items[i])
			}
			return list, nil
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			w, err := pods.Watch(ctx, opts)
			if err != nil {
				return nil, err
			}
			return watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
				// A bookmark is passed on as it is: the one that ends a
				// streamed list says so in an annotation.
				if p, ok := e.Object.(*corev1.Pod); ok && e.Type != watch.Bookmark {
					e.Object = SlimPod(p)
				}
				return e, true
			}), nil
		},
	}
	store := &podStore{cache: c}
	return &PodFeed{store: store, reflector: toolscache.NewReflectorWithOptions(lw, &corev1.Pod{}, store, toolscache.ReflectorOptions{Name: "koord-queue pods"})}, nil
}

// Start runs the reflector until ctx ends.
func (f *PodFeed) Start(ctx context.Context) error {
	f.reflector.RunWithContext(ctx)
	return nil
}

// NeedLeaderElection is false: every replica keeps the books.
func (f *PodFeed) NeedLeaderElection() bool { return false }

// HasSynced reports whether the first list reached the Cache.
func (f *PodFeed) HasSynced() bool { return f.store.synced.Load() }

// SlimPod is p cut to what the pod ledger reads (podledger.FromPod): its
// name, namespace, resource version, the release's annotations, its quota
// labels, its controller, its node, whether it is gated, its phase, and
// its request as one container asking it. p is changed in place.
func SlimPod(p *corev1.Pod) *corev1.Pod {
	keep := func(m map[string]string, keys ...string) map[string]string {
		var out map[string]string
		for _, k := range keys {
			if v, ok := m[k]; ok {
				if out == nil {
					out = map[string]string{}
				}
				out[k] = v
			}
		}
		return out
	}
	slim := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: p.Namespace, Name: p.Name, UID: p.UID, ResourceVersion: p.ResourceVersion,
			DeletionTimestamp: p.DeletionTimestamp,
			Annotations:       keep(p.Annotations, schedulingv1alpha1.AnnotationRelatedQueueUnit, schedulingv1alpha1.AnnotationRelatedPodSet),
			Labels:            keep(p.Labels, elasticquotav1alpha1.LabelQuotaName, elasticquotav1alpha1.LabelQuotaNameAlibabaCloud),
		},
		Spec: corev1.PodSpec{
			NodeName:   p.Spec.NodeName,
			Containers: []corev1.Container{{Name: "requests", Resources: corev1.ResourceRequirements{Requests: resources.PodRequests(&p.Spec)}}},
		},
		Status: corev1.PodStatus{Phase: p.Status.Phase},
	}
	if ref := metav1.GetControllerOfNoCopy(p); ref != nil {
		slim.OwnerReferences = []metav1.OwnerReference{*ref}
	}
	if len(p.Spec.SchedulingGates) > 0 {
		slim.Spec.SchedulingGates = p.Spec.SchedulingGates[:1]
	}
	return slim
}

// podStore is the reflector's store: the Cache's pod ledger. The reflector
// only writes to it (and reads ListKeys, which it does not need here).
type podStore struct {
	cache  *Cache
	synced atomic.Bool
}

var _ toolscache.Store = (*podStore)(nil)

func (s *podStore) Add(obj any) error {
	if p, ok := obj.(*corev1.Pod); ok {
		s.cache.UpsertPod(p)
	}
	return nil
}

func (s *podStore) Update(obj any) error { return s.Add(obj) }

func (s *podStore) Delete(obj any) error {
	if tombstone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	if p, ok := obj.(*corev1.Pod); ok {
		s.cache.DeletePod(p.Namespace, p.Name)
	}
	return nil
}

// Replace makes the ledger the list's pods, and nothing else.
func (s *podStore) Replace(list []any, _ string) error {
	pods := make([]*corev1.Pod, 0, len(list))
	for _, obj := range list {
		if p, ok := obj.(*corev1.Pod); ok {
			pods = append(pods, p)
		}
	}
	s.cache.ReplacePods(pods)
	s.synced.Store(true)
	return nil
}

func (s *podStore) List() []any                        { return nil }
func (s *podStore) ListKeys() []string                 { return nil }
func (s *podStore) Get(any) (any, bool, error)         { return nil, false, nil }
func (s *podStore) GetByKey(string) (any, bool, error) { return nil, false, nil }
func (s *podStore) Resync() error                      { return nil }
