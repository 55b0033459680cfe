package watchcodec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	jsonserializer "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	restclientwatch "k8s.io/client-go/rest/watch"
	"sigs.k8s.io/randfill"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
)

func newScheme(t testing.TB) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := schedulingv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// randomUnits are n QueueUnits with every field filled at random, strings
// of any runes included, as a tenant may write them.
func randomUnits(seed uint64, n int) []*schedulingv1alpha1.QueueUnit {
	f := randfill.NewWithSeed(int64(seed)).NilChance(0.2).NumElements(0, 3).MaxDepth(12).Funcs(
		func(q *resource.Quantity, c randfill.Continue) {
			*q = *resource.NewMilliQuantity(c.Int63n(1<<40), resource.DecimalSI)
		},
		func(f *metav1.FieldsV1, c randfill.Continue) {
			f.Raw = []byte(`{"f:spec":{"f:queue":{}}}`)
		},
		func(t *metav1.Time, c randfill.Continue) {
			*t = metav1.Unix(c.Int63n(1<<33), 0)
		},
		func(t **metav1.Time, c randfill.Continue) {
			if c.Bool() {
				v := metav1.Unix(c.Int63n(1<<33), 0)
				*t = &v
			}
		},
	)
	units := make([]*schedulingv1alpha1.QueueUnit, n)
	for i := range units {
		u := &schedulingv1alpha1.QueueUnit{}
		f.Fill(u)
		u.APIVersion, u.Kind = schedulingv1alpha1.GroupVersion.String(), "QueueUnit"
		units[i] = u
	}
	return units
}

// watchStream is what an API server writes for events: each a WatchEvent
// encoded as JSON, one after another, whitespace between as space says.
func watchStream(t testing.TB, events []watch.Event, space func(i int) string) []byte {
	t.Helper()
	enc := jsonserializer.NewSerializerWithOptions(jsonserializer.DefaultMetaFactory, nil, nil, jsonserializer.SerializerOptions{})
	var out bytes.Buffer
	for i, e := range events {
		var object bytes.Buffer
		if err := enc.Encode(e.Object, &object); err != nil {
			t.Fatal(err)
		}
		raw := bytes.TrimSpace(object.Bytes())
		if err := enc.Encode(&metav1.WatchEvent{Type: string(e.Type), Object: runtime.RawExtension{Raw: raw}}, &out); err != nil {
			t.Fatal(err)
		}
		out.WriteString(space(i))
	}
	return out.Bytes()
}

// decodeStream decodes a watch stream as client-go's REST client does,
// with the serializers ns negotiates for JSON: each event's type and
// object, and the error that ended the stream.
func decodeStream(t testing.TB, ns runtime.NegotiatedSerializer, stream io.Reader) ([]watch.Event, error) {
	t.Helper()
	info, ok := runtime.SerializerInfoForMediaType(ns.SupportedMediaTypes(), runtime.ContentTypeJSON)
	if !ok {
		t.Fatal("no JSON serializer")
	}
	frames := info.StreamSerializer.Framer.NewFrameReader(io.NopCloser(stream))
	d := restclientwatch.NewDecoder(streaming.NewDecoder(frames, info.StreamSerializer.Serializer), ns.DecoderToVersion(info.Serializer, schedulingv1alpha1.GroupVersion))
	var events []watch.Event
	for {
		typ, obj, err := d.Decode()
		if err != nil {
			return events, err
		}
		events = append(events, watch.Event{Type: typ, Object: obj})
	}
}

// clientGos is what controller-runtime's informers decode with.
func clientGos(scheme *runtime.Scheme) runtime.NegotiatedSerializer {
	return serializer.WithoutConversionCodecFactory{CodecFactory: serializer.NewCodecFactory(scheme)}
}

// clearManagedFields is events with their objects' managedFields
// dropped, as Serializers decode them.
func clearManagedFields(events []watch.Event) []watch.Event {
	for _, e := range events {
		if o, ok := e.Object.(metav1.Object); ok {
			o.SetManagedFields(nil)
		}
	}
	return events
}

// TestPropertyWatchEventsDecodeAsClientGoDecodesThem: streams of random
// units added, modified and deleted, an initial-events-end bookmark and an
// error, with any whitespace between events and read in chunks of any
// size, decode to the same events, objects (but for their managedFields,
// dropped) and final error through Serializers as through client-go's
// codecs.
func TestPropertyWatchEventsDecodeAsClientGoDecodesThem(t *testing.T) {
	scheme := newScheme(t)
	spaces := []string{"\n", "", " ", "\r\n\t ", "\n\n"}
	for seed := range uint64(25) {
		r := rand.New(rand.NewPCG(seed, 7))
		var events []watch.Event
		for _, u := range randomUnits(seed, 1+r.IntN(12)) {
			events = append(events, watch.Event{Type: []watch.EventType{watch.Added, watch.Modified, watch.Deleted}[r.IntN(3)], Object: u})
		}
		bookmark := &schedulingv1alpha1.QueueUnit{TypeMeta: metav1.TypeMeta{APIVersion: schedulingv1alpha1.GroupVersion.String(), Kind: "QueueUnit"},
			ObjectMeta: metav1.ObjectMeta{ResourceVersion: "12345", Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
		events = append(events, watch.Event{Type: watch.Bookmark, Object: bookmark})
		if r.IntN(2) == 0 {
			status := &metav1.Status{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}, Status: metav1.StatusFailure,
				Message: "too old resource version: 1 (\"2\")", Reason: metav1.StatusReasonExpired, Code: 410}
			events = append(events, watch.Event{Type: watch.Error, Object: status})
		}
		stream := watchStream(t, events, func(int) string { return spaces[r.IntN(len(spaces))] })
		if r.IntN(3) == 0 { // cut off mid-event
			stream = stream[:r.IntN(len(stream))]
		}
		chunk := 1 + r.IntN(4096)

		wantEvents, wantErr := decodeStream(t, clientGos(scheme), &chunkReader{data: stream, chunk: chunk})
		wantEvents = clearManagedFields(wantEvents)
		gotEvents, gotErr := decodeStream(t, NewSerializers(scheme), &chunkReader{data: stream, chunk: chunk})
		if diff := cmp.Diff(wantEvents, gotEvents); diff != "" {
			t.Errorf("seed %d: events (-client-go +watchcodec):\n%s", seed, diff)
		}
		if !sameError(wantErr, gotErr) {
			t.Errorf("seed %d: stream ended with %v, client-go's with %v", seed, gotErr, wantErr)
		}
	}
}

// TestPropertyListsDecodeAsClientGoDecodesThem: a list of random units
// decodes as client-go decodes it.
func TestPropertyListsDecodeAsClientGoDecodesThem(t *testing.T) {
	scheme := newScheme(t)
	enc := jsonserializer.NewSerializerWithOptions(jsonserializer.DefaultMetaFactory, nil, nil, jsonserializer.SerializerOptions{})
	for seed := range uint64(8) {
		list := &schedulingv1alpha1.QueueUnitList{TypeMeta: metav1.TypeMeta{APIVersion: schedulingv1alpha1.GroupVersion.String(), Kind: "QueueUnitList"},
			ListMeta: metav1.ListMeta{ResourceVersion: "77"}}
		for _, u := range randomUnits(seed, 10) {
			list.Items = append(list.Items, *u)
		}
		var body bytes.Buffer
		if err := enc.Encode(list, &body); err != nil {
			t.Fatal(err)
		}
		decode := func(ns runtime.NegotiatedSerializer) runtime.Object {
			info, _ := runtime.SerializerInfoForMediaType(ns.SupportedMediaTypes(), runtime.ContentTypeJSON)
			into := &schedulingv1alpha1.QueueUnitList{}
			obj, _, err := ns.DecoderToVersion(info.Serializer, schedulingv1alpha1.GroupVersion).Decode(body.Bytes(), nil, into)
			if err != nil {
				t.Fatal(err)
			}
			return obj
		}
		if diff := cmp.Diff(decode(clientGos(scheme)), decode(NewSerializers(scheme))); diff != "" {
			t.Errorf("seed %d: list (-client-go +watchcodec):\n%s", seed, diff)
		}
	}
}

// TestFramerSplitsAsAPIMachinerysDoes: the frames of a stream, read with
// caller buffers too short for them, and how the stream ends.
func TestFramerSplitsAsAPIMachinerysDoes(t *testing.T) {
	cases := map[string]string{
		"objects":                        `{"a":1} {"b":{"c":[1,2,{"d":"}"}]}}` + "\n" + `{}`,
		"braces and quotes in strings":   `{"a":"{[\"}\\\\"}{"b":"\\\"}"}`,
		"white space before and after":   " \n\t\r{\"a\":[]}\n\n ",
		"cut off in a string":            `{"a":"b`,
		"cut off after an escape":        `{"a":"\`,
		"cut off between objects":        `{"a":1}{`,
		"empty":                          ``,
		"only white space":               " \n ",
		"unicode":                        `{"ключ":"значение ☃ \u2603"}`,
		"a long object":                  `{"a":"` + strings.Repeat("x", 3*readSize) + `"}{"b":2}`,
		"nested deep":                    strings.Repeat(`{"a":`, 100) + "1" + strings.Repeat("}", 100),
		"arrays inside, brackets in key": `{"[":["]",{"}":"{"}]}`,
	}
	for name, stream := range cases {
		for _, chunk := range []int{1, 3, 64, 1 << 20} {
			for _, buf := range []int{1, 5, 1024} {
				t.Run(fmt.Sprintf("%s/chunk %d/buffer %d", name, chunk, buf), func(t *testing.T) {
					wantFrames, wantErr := frames(jsonserializer.Framer, stream, chunk, buf)
					gotFrames, gotErr := frames(Framer, stream, chunk, buf)
					if diff := cmp.Diff(wantFrames, gotFrames); diff != "" {
						t.Errorf("frames (-apimachinery +watchcodec):\n%s", diff)
					}
					if !errors.Is(gotErr, wantErr) {
						t.Errorf("stream ended with %v, apimachinery's with %v", gotErr, wantErr)
					}
				})
			}
		}
	}
}

// TestFramerRefusesWhatIsNotAnObject: a watch sends objects; anything else
// ends the stream with an error (apimachinery's framer passes it on, and
// decoding it as an event fails).
func TestFramerRefusesWhatIsNotAnObject(t *testing.T) {
	for _, stream := range []string{`[1]`, `"a"`, `1`, `{"a":1} x`} {
		got, err := frames(Framer, stream, 1<<20, 1024)
		if err == nil || errors.Is(err, io.EOF) {
			t.Errorf("%q: frames %q and %v, want an error", stream, got, err)
		}
	}
}

// frames reads every frame of stream as apimachinery's streaming decoder
// reads them: into a buffer of size buf, grown (doubled) on
// io.ErrShortBuffer, the stream arriving in reads of chunk bytes.
func frames(f runtime.Framer, stream string, chunk, buf int) ([]string, error) {
	r := f.NewFrameReader(io.NopCloser(&chunkReader{data: []byte(stream), chunk: chunk}))
	var out []string
	data := make([]byte, buf)
	for {
		base := 0
		for {
			n, err := r.Read(data[base:])
			if errors.Is(err, io.ErrShortBuffer) {
				base += n
				data = append(data, make([]byte, len(data))...)
				continue
			}
			if err != nil {
				return out, err
			}
			base += n
			break
		}
		out = append(out, string(data[:base]))
	}
}

func TestMetaFactoryReadsAsSimpleMetaFactoryDoes(t *testing.T) {
	cases := []string{
		`{"apiVersion":"scheduling.x-k8s.io/v1alpha1","kind":"QueueUnit","metadata":{"name":"a","kind":"Pod"}}`,
		`{"kind":"QueueUnit"}`,
		`{"apiVersion":"v1"}`,
		`{}`,
		` { } `,
		`{"metadata":{"apiVersion":"x/v1"},"spec":[{"kind":"X"}]}`,
		`{"kind":"A","kind":"B"}`,
		`{"Kind":"A","kind":"B"}`,
		`{"kind":"B","KIND":"A"}`,
		`{"apiversion":"x/v1","kind":"A"}`,
		`{"\u006bind":"A"}`,
		`{"ｋind":"A"}`,
		"{\"\u212aind\":\"A\"}",
		`{"kind":"Q\u0055"}`,
		`{"kind":"é"}`,
		`{"kind":1}`,
		`{"kind":null,"apiVersion":"v1"}`,
		`{"kind":"A"} x`,
		`{"kind":"A"}}`,
		`{"kind":"A",}`,
		`{"kind" : "A" , "apiVersion" : "a/b/c"}`,
		`{"apiVersion":"/v1"}`,
		`{"a":true,"b":false,"c":null,"d":-1.5e3,"kind":"A"}`,
		`{"a":"\"","kind":"A"}`,
		`[]`,
		`"kind"`,
		``,
		`{"kind":"A"`,
	}
	for _, data := range cases {
		want, wantErr := jsonserializer.SimpleMetaFactory{}.Interpret([]byte(data))
		got, gotErr := MetaFactory.Interpret([]byte(data))
		if diff := cmp.Diff(want, got); diff != "" || (wantErr == nil) != (gotErr == nil) {
			t.Errorf("%s: (-SimpleMetaFactory +MetaFactory):\n%s\nerrors %v and %v", data, diff, wantErr, gotErr)
		}
	}
}

// TestPropertyMetaFactoryReadsAsSimpleMetaFactoryDoes: random objects of
// keys that spell apiVersion and kind in several ways, beside other keys
// holding any JSON, read the same.
func TestPropertyMetaFactoryReadsAsSimpleMetaFactoryDoes(t *testing.T) {
	keys := []string{"apiVersion", "kind", "Kind", "APIVERSION", "metadata", "spec", `k\u0069nd`, "kınd", `a\"b`, "{", "}"}
	strs := []string{"v1", "a/v1", "a/b/c", "", "QueueUnit", `\"`, "}", "]", `\\`, "ü", "/"}
	r := rand.New(rand.NewPCG(1, 2))
	var value func(depth int) string
	value = func(depth int) string {
		switch n := r.IntN(7); {
		case n == 0 && depth < 4:
			return object(r, keys, value, depth+1)
		case n == 1 && depth < 4:
			var parts []string
			for range r.IntN(3) {
				parts = append(parts, value(depth+1))
			}
			return "[" + strings.Join(parts, ",") + "]"
		case n == 2:
			return []string{"true", "false", "null", "0", "-1.5e3"}[r.IntN(5)]
		default:
			return `"` + strs[r.IntN(len(strs))] + `"`
		}
	}
	for i := range 5000 {
		data := []byte(object(r, keys, value, 0))
		if !json.Valid(data) {
			t.Fatalf("object %d is no JSON: %s", i, data)
		}
		want, wantErr := jsonserializer.SimpleMetaFactory{}.Interpret(data)
		got, gotErr := MetaFactory.Interpret(data)
		if diff := cmp.Diff(want, got); diff != "" || (wantErr == nil) != (gotErr == nil) {
			t.Fatalf("object %d %s: (-SimpleMetaFactory +MetaFactory):\n%s\nerrors %v and %v", i, data, diff, wantErr, gotErr)
		}
	}
}

func object(r *rand.Rand, keys []string, value func(int) string, depth int) string {
	var parts []string
	for range r.IntN(5) {
		space := []string{"", " ", "\n"}[r.IntN(3)]
		parts = append(parts, space+`"`+keys[r.IntN(len(keys))]+`"`+space+":"+space+value(depth))
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// chunkReader returns data in reads of at most chunk bytes.
type chunkReader struct {
	data  []byte
	chunk int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.data[:min(c.chunk, len(c.data))])
	c.data = c.data[n:]
	return n, nil
}

// sameError: both nil, or both the same sentinel, or both other errors.
func sameError(want, got error) bool {
	for _, sentinel := range []error{io.EOF, io.ErrUnexpectedEOF} {
		if errors.Is(want, sentinel) || errors.Is(got, sentinel) {
			return errors.Is(want, sentinel) && errors.Is(got, sentinel)
		}
	}
	return (want == nil) == (got == nil)
}

// benchManagedFields are a unit's managedFields as an API server keeps
// them for a batch Job's unit: the extensions' create, koord-queue's
// admission and the extensions' status.
var (
	benchTime          = metav1.Unix(1_700_000_100, 0)
	benchManagedFields = []metav1.ManagedFieldsEntry{
		{Manager: "koord-queue", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "scheduling.x-k8s.io/v1alpha1", Time: &benchTime, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{".":{},"f:admissions":{".":{},"k:{\"name\":\"main\"}":{".":{},"f:name":{},"f:replicas":{},"f:running":{}}},"f:conditions":{".":{},"k:{\"type\":\"Admitted\"}":{".":{},"f:lastTransitionTime":{},"f:message":{},"f:reason":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Evicted\"}":{".":{},"f:lastTransitionTime":{},"f:message":{},"f:reason":{},"f:status":{},"f:type":{}}},"f:lastAllocateTime":{},"f:podState":{}}}`)}, Subresource: "status"},
		{Manager: "koord-queue-controllers", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "scheduling.x-k8s.io/v1alpha1", Time: &benchTime, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{".":{},"f:quota.scheduling.koordinator.sh/name":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"f6ded5cd-b84e-429f-97eb-112901ed449d\"}":{}}},"f:spec":{".":{},"f:consumerRef":{},"f:podSet":{".":{},"k:{\"name\":\"main\"}":{".":{},"f:count":{},"f:name":{},"f:template":{".":{},"f:metadata":{".":{},"f:annotations":{".":{},"f:pod-complete.stage.kwok.x-k8s.io/delay":{}},"f:labels":{".":{},"f:batch.kubernetes.io/controller-uid":{},"f:batch.kubernetes.io/job-name":{},"f:class":{},"f:controller-uid":{},"f:job-name":{}}},"f:spec":{".":{},"f:containers":{".":{},"k:{\"name\":\"main\"}":{".":{},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:resources":{".":{},"f:requests":{".":{},"f:cpu":{}}},"f:terminationMessagePath":{},"f:terminationMessagePolicy":{}}},"f:dnsPolicy":{},"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},"f:terminationGracePeriodSeconds":{}}}}},"f:queue":{},"f:request":{".":{},"f:cpu":{}},"f:resource":{".":{},"f:cpu":{}}}}`)}},
		{Manager: "koord-queue-controllers", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "scheduling.x-k8s.io/v1alpha1", Time: &benchTime, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{"f:admissionsSummary":{},"f:conditions":{"k:{\"type\":\"PodsReady\"}":{".":{},"f:lastTransitionTime":{},"f:message":{},"f:observedGeneration":{},"f:reason":{},"f:status":{},"f:type":{}}},"f:lastUpdateTime":{},"f:phase":{},"f:podState":{"f:running":{}}}}`)}, Subresource: "status"},
	}
)

// BenchmarkDecodeWatch decodes a watch stream of 5,000 admitted QueueUnits
// shaped as the perf harness's (a quota label, two labels of its own, one
// cpu, admitted, with a Job's unit's managedFields), as a start with
// streamed lists receives them, through client-go's codecs and through
// Serializers:
//
//	go test ./pkg/watchcodec -run XXX -bench DecodeWatch -benchmem
func BenchmarkDecodeWatch(b *testing.B) {
	const units = 5000
	scheme := newScheme(b)
	var events []watch.Event
	for i := range units {
		team := fmt.Sprintf("team-%03d", i%100)
		u := wrappers.MakeQueueUnit(fmt.Sprintf("small-%05d", i), team).Quota(team).Priority(50).
			Request(corev1.ResourceCPU, "1").
			Label("perf.koord-queue.io/class", "small").Label("perf.koord-queue.io/runtime-ms", "200").Obj()
		u.APIVersion, u.Kind = schedulingv1alpha1.GroupVersion.String(), "QueueUnit"
		u.UID = types.UID(fmt.Sprintf("6e3c3a49-2f0e-4a57-9a47-%012d", i))
		u.ResourceVersion = fmt.Sprint(1000 + i)
		u.CreationTimestamp = metav1.Unix(1_700_000_000, 0)
		queueunit.Admit(u, team, queueunit.Request(u), nil, nil, metav1.Unix(1_700_000_100, 0))
		u.ManagedFields = benchManagedFields
		events = append(events, watch.Event{Type: watch.Added, Object: u})
	}
	stream := watchStream(b, events, func(int) string { return "\n" })
	for _, s := range []struct {
		name string
		ns   runtime.NegotiatedSerializer
	}{{"client-go", clientGos(scheme)}, {"watchcodec", NewSerializers(scheme)}} {
		b.Run(s.name, func(b *testing.B) {
			b.SetBytes(int64(len(stream)))
			for b.Loop() {
				got, err := decodeStream(b, s.ns, bytes.NewReader(stream))
				if !errors.Is(err, io.EOF) || len(got) != units {
					b.Fatalf("decoded %d events, then %v", len(got), err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*units), "ns/event")
		})
	}
}

// TestEventEnvelopesDecodeAsClientGoDecodesThem: events written other than
// as an API server writes them decode, or fail, as client-go's decode
// them.
func TestEventEnvelopesDecodeAsClientGoDecodesThem(t *testing.T) {
	const unit = `{"apiVersion":"scheduling.x-k8s.io/v1alpha1","kind":"QueueUnit","metadata":{"name":"a","namespace":"n"}}`
	scheme := newScheme(t)
	for _, event := range []string{
		`{"type":"ADDED","object":` + unit + `}`,
		`{"object":` + unit + `,"type":"MODIFIED"}`,
		` { "type" : "DELETED" , "object" : ` + unit + ` } `,
		`{"type":"ADDED","type":"DELETED","object":` + unit + `}`,
		`{"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1"},"object":` + unit + `}`,
		`{"Type":"ADDED","object":` + unit + `}`,
		`{"type":"ADDED","Object":` + unit + `}`,
		`{"type":"ADDED","object":` + unit + `,"extra":[1,2]}`,
		`{"type":"ADDED","object":` + unit + `,"extra":[1,,2]}`,
		`{"type":"ADDED"}`,
		`{"object":` + unit + `}`,
		`{"type":"ADDED","object":null}`,
		`{"type":"ADDED","object":"x"}`,
		`{"type":1,"object":` + unit + `}`,
		`{"type":"ADD\u0045D","object":` + unit + `}`,
		`{"type":"ADDED","object":{"apiVersion":"scheduling.x-k8s.io/v1alpha1","kind":"QueueUnit","metadata":{"name":}}}`,
		`{"type":"UPSERTED","object":` + unit + `}`,
		`{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","code":410,"reason":"Expired"}}`,
	} {
		wantEvents, wantErr := decodeStream(t, clientGos(scheme), strings.NewReader(event))
		gotEvents, gotErr := decodeStream(t, NewSerializers(scheme), strings.NewReader(event))
		if diff := cmp.Diff(wantEvents, gotEvents); diff != "" {
			t.Errorf("%s: events (-client-go +watchcodec):\n%s", event, diff)
		}
		if !sameError(wantErr, gotErr) {
			t.Errorf("%s: stream ended with %v, client-go's with %v", event, gotErr, wantErr)
		}
	}
}

// TestWithoutManagedFieldsCutsThemAlone: metadata.managedFields goes
// wherever it stands among metadata's members, with one comma and the
// object left valid JSON; a managedFields elsewhere, or an object that
// cannot be read with plain keys, stays as it is.
func TestWithoutManagedFieldsCutsThemAlone(t *testing.T) {
	const mf = `"managedFields":[{"manager":"a","fieldsV1":{"f:spec":{"f:x":{}}}},{"manager":"b\"]}"}]`
	for _, tc := range []struct{ in, want string }{
		{`{"kind":"K","metadata":{"name":"n",` + mf + `,"uid":"u"},"spec":{}}`, `{"kind":"K","metadata":{"name":"n","uid":"u"},"spec":{}}`},
		{`{"metadata":{` + mf + `,"name":"n"}}`, `{"metadata":{"name":"n"}}`},
		{`{"metadata":{"name":"n",` + mf + `}}`, `{"metadata":{"name":"n"}}`},
		{`{"metadata":{` + mf + `}}`, `{"metadata":{}}`},
		{"{ \"metadata\" : { \"name\" : \"n\" ,\n \"managedFields\" : [ ] \n } }", "{ \"metadata\" : { \"name\" : \"n\" \n } }"},
		{"{\"metadata\":{\"managedFields\":null , \"name\":\"n\"}}", `{"metadata":{ "name":"n"}}`},
		{`{"metadata":{"name":"n",` + mf + `,"name":"m",` + mf + `}}`, `{"metadata":{"name":"n","name":"m",` + mf + `}}`},
		{`{"spec":{` + mf + `},"metadata":{"name":"n"}}`, `{"spec":{` + mf + `},"metadata":{"name":"n"}}`},
		{`{"metadata":{"name":"n"}}`, `{"metadata":{"name":"n"}}`},
		{`{"metadata":{}}`, `{"metadata":{}}`},
		{`{}`, `{}`},
		{`{"kind":"K"}`, `{"kind":"K"}`},
		{`{"metadata":null}`, `{"metadata":null}`},
		{`{"meta\u0064ata":{` + mf + `}}`, `{"meta\u0064ata":{` + mf + `}}`},
		{`{"metadata":{"n\u0061me":"n",` + mf + `}}`, `{"metadata":{"n\u0061me":"n",` + mf + `}}`},
		{`{"metadata":{"name":"n",` + mf, `{"metadata":{"name":"n",` + mf},
		{`[` + mf + `]`, `[` + mf + `]`},
	} {
		got := withoutManagedFields([]byte(tc.in))
		if diff := cmp.Diff(tc.want, string(got)); diff != "" {
			t.Errorf("withoutManagedFields(%s) (-want +got):\n%s", tc.in, diff)
		}
		if json.Valid([]byte(tc.in)) && !json.Valid(got) {
			t.Errorf("withoutManagedFields(%s) = %s, not JSON", tc.in, got)
		}
	}
}
