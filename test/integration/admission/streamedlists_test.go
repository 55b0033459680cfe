package admission

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
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
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	restclientwatch "k8s.io/client-go/rest/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
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
			// The binary's cache indexes no unit by namespace: list them all.
			all := &schedulingv1alpha1.QueueUnitList{}
			if err := c.List(ctx, all); err != nil {
				t.Fatal(err)
			}
			got := slices.DeleteFunc(all.Items, func(u schedulingv1alpha1.QueueUnit) bool { return u.Namespace != ns })
			if len(got) != units {
				t.Fatalf("the cache holds %d units of namespace %s, want %d", len(got), ns, units)
			}
			for _, u := range got {
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
// what JSON escapes, as a real API server lists and streams them, decode
// through watchcodec as through client-go's codecs, but that the streamed
// ones come without the managedFields the server gave them. Both decode
// the same bytes: the package's koord-queue writes to units between two
// reads.
func TestWatchCodecReadsUnitsAsClientGoDoes(t *testing.T) {
	ns := namespace(t)
	hostile := []string{`"quoted" {braces} [brackets]`, `back\slash \" \\`, "line\nbreak\ttab", "ünïcödé ☃ 𝄞 \u2028", `{"kind":"Pod","apiVersion":"v1"}`, "<script>&amp;", `a"{ unbalanced`, `unbalanced ]}"`, `\"}`}
	for i, s := range hostile {
		u := wrappers.MakeQueueUnit(fmt.Sprintf("unit-%d", i), ns).Quota(ns).Request(corev1.ResourceCPU, "1").Obj()
		u.Annotations = map[string]string{"note": s, "kind": s, "apiVersion": s}
		u.Spec.ConsumerRef = &corev1.ObjectReference{Kind: "Job", Name: fmt.Sprintf("job-%d", i), FieldPath: s}
		create(t, u)
	}
	httpClient, err := rest.HTTPClientFor(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	gv := schedulingv1alpha1.GroupVersion
	client, err := apiutil.RESTClientForGVK(gv.WithKind("QueueUnit"), false, false, env.Config, serializer.NewCodecFactory(env.Scheme), httpClient)
	if err != nil {
		t.Fatal(err)
	}
	params := runtime.NewParameterCodec(env.Scheme)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	clientGo := serializer.WithoutConversionCodecFactory{CodecFactory: serializer.NewCodecFactory(env.Scheme)}
	ours := watchcodec.NewSerializers(env.Scheme)

	list, err := client.Get().Namespace(ns).Resource("queueunits").Do(ctx).Raw()
	if err != nil {
		t.Fatal(err)
	}
	decodeList := func(s runtime.NegotiatedSerializer) runtime.Object {
		info, _ := runtime.SerializerInfoForMediaType(s.SupportedMediaTypes(), runtime.ContentTypeJSON)
		obj, err := runtime.Decode(s.DecoderToVersion(info.Serializer, gv), list)
		if err != nil {
			t.Fatal(err)
		}
		return obj
	}
	want := decodeList(clientGo)
	if n := len(want.(*schedulingv1alpha1.QueueUnitList).Items); n != len(hostile) {
		t.Fatalf("listed %d units, want %d", n, len(hostile))
	}
	if diff := cmp.Diff(want, decodeList(ours)); diff != "" {
		t.Errorf("list (-client-go +watchcodec):\n%s", diff)
	}

	// The server ends the stream after timeoutSeconds, so it reads whole.
	stream, err := client.Get().Namespace(ns).Resource("queueunits").VersionedParams(&metav1.ListOptions{
		Watch: true, SendInitialEvents: ptr.To(true), AllowWatchBookmarks: true,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, TimeoutSeconds: ptr.To[int64](2),
	}, params).Stream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	events, err := io.ReadAll(stream)
	stream.Close()
	if err != nil {
		t.Fatal(err)
	}
	wantEvents := decodeEvents(t, clientGo, events)
	if len(wantEvents) <= len(hostile) { // and the initial-events-end bookmark
		t.Fatalf("client-go decoded %d events, want more than %d", len(wantEvents), len(hostile))
	}
	managed := 0
	for _, e := range wantEvents {
		if u, ok := e.Object.(*schedulingv1alpha1.QueueUnit); ok && len(u.ManagedFields) > 0 {
			managed++
			u.ManagedFields = nil
		}
	}
	if managed < len(hostile) {
		t.Fatalf("client-go decoded %d units with managedFields, want all %d", managed, len(hostile))
	}
	if diff := cmp.Diff(wantEvents, decodeEvents(t, ours, events)); diff != "" {
		t.Errorf("streamed events (-client-go +watchcodec):\n%s", diff)
	}
}

// decodeEvents decodes a watch stream's bytes as client-go's REST client
// does, with the serializers s negotiates for JSON.
func decodeEvents(t *testing.T, s runtime.NegotiatedSerializer, stream []byte) []watch.Event {
	t.Helper()
	info, _ := runtime.SerializerInfoForMediaType(s.SupportedMediaTypes(), runtime.ContentTypeJSON)
	frames := info.StreamSerializer.Framer.NewFrameReader(io.NopCloser(bytes.NewReader(stream)))
	d := restclientwatch.NewDecoder(streaming.NewDecoder(frames, info.StreamSerializer.Serializer), s.DecoderToVersion(info.Serializer, schedulingv1alpha1.GroupVersion))
	var events []watch.Event
	for {
		typ, obj, err := d.Decode()
		if errors.Is(err, io.EOF) {
			return events
		}
		if err != nil {
			t.Fatalf("after %d events: %v", len(events), err)
		}
		events = append(events, watch.Event{Type: typ, Object: obj})
	}
}
