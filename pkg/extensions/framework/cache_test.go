package framework

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/testing/fakeapi"
)

// TestCacheOptionsReadUnitsThroughWatchCodec: the extensions' QueueUnit
// informer lists and watches through watchcodec's client, not the
// ListerWatcher controller-runtime gives it, and keeps the indexes
// controller-runtime asks for (units are read by namespace).
func TestCacheOptionsReadUnitsThroughWatchCodec(t *testing.T) {
	const unit = `{"apiVersion":"scheduling.x-k8s.io/v1alpha1","kind":"QueueUnit","metadata":{"name":"a","namespace":"n","resourceVersion":"5"}}`
	url, unitRequests := fakeapi.QueueUnits(t, unit)
	opts, err := CacheOptions(&rest.Config{Host: url})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	var givenCalls atomic.Int32
	given := &toolscache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			givenCalls.Add(1)
			return nil, errors.New("controller-runtime's ListerWatcher was used")
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			givenCalls.Add(1)
			return nil, errors.New("controller-runtime's ListerWatcher was used")
		},
	}
	byNamespace := toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc}
	units := opts.NewInformer(given, &schedulingv1alpha1.QueueUnit{}, 0, byNamespace)
	go units.RunWithContext(ctx)
	if !toolscache.WaitForCacheSync(ctx.Done(), units.HasSynced) {
		t.Fatal("the QueueUnit informer did not sync")
	}
	inN, err := units.GetIndexer().ByIndex(toolscache.NamespaceIndex, "n")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"n/a"}, keysOf(inN)); diff != "" {
		t.Errorf("QueueUnits of namespace n (-want +got):\n%s", diff)
	}
	if n := givenCalls.Load(); n != 0 || unitRequests.Load() == 0 {
		t.Errorf("QueueUnits read with %d calls of controller-runtime's ListerWatcher and %d requests of watchcodec's client, want 0 and some", n, unitRequests.Load())
	}
}

func keysOf(objs []any) []string {
	var keys []string
	for _, o := range objs {
		key, _ := toolscache.MetaNamespaceKeyFunc(o)
		keys = append(keys, key)
	}
	return keys
}
