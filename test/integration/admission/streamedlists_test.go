package admission

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/cmd/queue/app"
	"github.com/koord-queue/koord-queue/pkg/streamedlists"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
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
			opts := app.CacheOptions("")
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
