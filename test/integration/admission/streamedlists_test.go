package admission

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/cmd/queue/app"
	"github.com/koord-queue/koord-queue/pkg/streamedlists"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/pkg/watchcodec"
)

// TestUnitsAreStreamedIntoTheCache fills the binary's cache of QueueUnits
// from a real API server with --stream-initial-lists on and off: on, the
// units arrive by a watch that sends them first and no list is made, each
// unit trimmed as the cache keeps it; off, they are listed, as on an API
// server that does not serve streams.
func TestUnitsAreStreamedIntoTheCache(t *testing.T) {
	ns := namespace(t)
	const units = 30
	for i := range units {
		u := wrappers.MakeQueueUnit(fmt.Sprintf("unit-%02d", i), ns).Quota(ns).Obj()
		u.Annotations = map[string]string{corev1.LastAppliedConfigAnnotation: `{"kind":"QueueUnit"}`}
		u.Spec.PodSets = []schedulingv1alpha1.PodSet{{Name: "main", Count: 1, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "main", Image: "registry.example.com/trainer:v1", Command: []string{"train"},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
			}},
		}}}}
		create(t, u)
	}
	previous := streamedlists.Enabled()
	t.Cleanup(func() { streamedlists.Apply(previous) })

	for _, tc := range []struct {
		stream                bool
		wantStream, wantLists bool
	}{
		{stream: true, wantStream: true},
		{stream: false, wantLists: true},
	} {
		t.Run(fmt.Sprintf("stream=%v", tc.stream), func(t *testing.T) {
			streamedlists.Apply(tc.stream)
			requests := &unitRequests{}
			cfg := rest.CopyConfig(env.Config)
			cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return requests.record(rt) })
			opts, err := app.CacheOptions("", cfg)
			if err != nil {
				t.Fatal(err)
			}
			opts.Scheme = env.Scheme
			c, err := cache.New(cfg, opts)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.GetInformer(context.Background(), &schedulingv1alpha1.QueueUnit{}); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			go func() { _ = c.Start(ctx) }()
			if !c.WaitForCacheSync(ctx) {
				t.Fatal("the cache did not sync")
			}

			streamed, listed := requests.kinds()
			if streamed != tc.wantStream || listed != tc.wantLists {
				t.Errorf("QueueUnits streamed %v and listed %v, want %v and %v; requests:\n%s", streamed, listed, tc.wantStream, tc.wantLists, strings.Join(requests.all(), "\n"))
			}
			got := &schedulingv1alpha1.QueueUnitList{}
			if err := c.List(ctx, got, client.InNamespace(ns)); err != nil {
				t.Fatal(err)
			}
			if len(got.Items) != units {
				t.Fatalf("the cache holds %d units, want %d", len(got.Items), units)
			}
			for _, u := range got.Items {
				if _, ok := u.Annotations[corev1.LastAppliedConfigAnnotation]; ok || u.Spec.PodSets[0].Template.Spec.Containers[0].Image != "" {
					t.Fatalf("unit %s cached untrimmed: annotations %v, containers %+v", u.Name, u.Annotations, u.Spec.PodSets[0].Template.Spec.Containers)
				}
			}
		})
	}
}

// unitRequests records the client's requests for QueueUnits.
type unitRequests struct {
	mu   sync.Mutex
	urls []string
}

func (r *unitRequests) record(next http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		if strings.Contains(req.URL.Path, "/queueunits") {
			r.mu.Lock()
			r.urls = append(r.urls, req.Method+" "+req.URL.RequestURI())
			r.mu.Unlock()
		}
		return next.RoundTrip(req)
	})
}

// kinds says whether a watch sending the existing units first was opened,
// and whether the units were listed.
func (r *unitRequests) kinds() (streamed, listed bool) {
	for _, u := range r.all() {
		watch := strings.Contains(u, "watch=true")
		streamed = streamed || watch && strings.Contains(u, "sendInitialEvents=true")
		listed = listed || !watch
	}
	return streamed, listed
}

func (r *unitRequests) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.urls...)
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// TestWatchCodecReadsUnitsAsClientGoDoes: QueueUnits whose strings hold
// what JSON escapes, listed and streamed by a real API server, decode
// through watchcodec as through client-go's codecs.
func TestWatchCodecReadsUnitsAsClientGoDoes(t *testing.T) {
	ns := namespace(t)
	hostile := []string{`"quoted" {braces} [brackets]`, `back\slash \" \\`, "line\nbreak\ttab", "ünïcödé ☃ 𝄞 \u2028", `{"kind":"Pod","apiVersion":"v1"}`, "<script>&amp;", `a"{ unbalanced`, `unbalanced ]}"`, `\"}`}
	for i, s := range hostile {
		u := wrappers.MakeQueueUnit(fmt.Sprintf("unit-%d", i), ns).Quota(ns).Request(corev1.ResourceCPU, "1").Obj()
		u.Annotations = map[string]string{"note": s, "kind": s, "apiVersion": s}
		u.Spec.ConsumerRef = &corev1.ObjectReference{Kind: "Job", Name: fmt.Sprintf("job-%d", i), FieldPath: s}
		create(t, u)
	}
	gvk := schedulingv1alpha1.GroupVersion.WithKind("QueueUnit")
	httpClient, err := rest.HTTPClientFor(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	clientGo, err := apiutil.RESTClientForGVK(gvk, false, false, env.Config, serializer.NewCodecFactory(env.Scheme), httpClient)
	if err != nil {
		t.Fatal(err)
	}
	params := runtime.NewParameterCodec(env.Scheme)
	ours, err := watchcodec.ListWatch(env.Config, httpClient, env.Scheme, watchcodec.Resource{
		GroupVersion: schedulingv1alpha1.GroupVersion, Resource: "queueunits",
		NewList: func() runtime.Object { return &schedulingv1alpha1.QueueUnitList{} },
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)

	wantList := &schedulingv1alpha1.QueueUnitList{}
	if err := clientGo.Get().Resource("queueunits").VersionedParams(&metav1.ListOptions{}, params).Do(ctx).Into(wantList); err != nil {
		t.Fatal(err)
	}
	gotList, err := ours.ListWithContext(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantList, gotList); diff != "" {
		t.Errorf("list (-client-go +watchcodec):\n%s", diff)
	}

	stream := metav1.ListOptions{SendInitialEvents: ptr.To(true), AllowWatchBookmarks: true, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, Watch: true}
	wantWatch, err := clientGo.Get().Resource("queueunits").VersionedParams(&stream, params).Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	gotWatch, err := ours.WatchWithContext(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	want, got := initialEvents(t, wantWatch), initialEvents(t, gotWatch)
	if len(want) < len(hostile) {
		t.Fatalf("client-go streamed %d units, want at least %d", len(want), len(hostile))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("streamed units (-client-go +watchcodec):\n%s", diff)
	}
}

// initialEvents reads w's events up to the bookmark that ends its initial
// events, and stops it.
func initialEvents(t *testing.T, w watch.Interface) []watch.Event {
	t.Helper()
	defer w.Stop()
	var events []watch.Event
	for e := range w.ResultChan() {
		if e.Type == watch.Error {
			t.Fatalf("watch error: %v", e.Object)
		}
		if e.Type == watch.Bookmark {
			if u, ok := e.Object.(*schedulingv1alpha1.QueueUnit); ok && u.Annotations[metav1.InitialEventsAnnotationKey] == "true" {
				return events
			}
			continue
		}
		events = append(events, e)
	}
	t.Fatal("the watch ended before its initial events did")
	return nil
}
