// Package watchcodec decodes an informer's lists and watches of one typed
// resource in fewer passes over each object's bytes than client-go's JSON
// stack, to the same objects, but that a watched object comes without its
// managedFields, which are more than half of a QueueUnit's bytes and which
// neither koord-queue nor the extensions keep.
//
// client-go reads every event of a watch five times: its framer parses the
// event to find where it ends, SimpleMetaFactory parses it again for an
// apiVersion and a kind (and once more the object inside), and the event
// and then the object are decoded. At a start of koord-queue with 50,000
// QueueUnits streamed, the framer and the two apiVersion and kind reads
// were a quarter of the process's CPU. Here the framer scans for the
// object's closing brace (Framer) and the apiVersion and kind are read off
// the top-level keys (MetaFactory); the decoding itself is apimachinery's
// JSON serializer, as before.
package watchcodec

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	jsonserializer "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
)

// Serializers is a NegotiatedSerializer of JSON alone, with Framer and
// MetaFactory, decoding to the objects scheme makes without converting
// them and with their apiVersion and kind cleared, as the informers of
// controller-runtime's cache (serializer.WithoutConversionCodecFactory) do.
type Serializers struct {
	scheme *runtime.Scheme
	info   runtime.SerializerInfo
}

var _ runtime.NegotiatedSerializer = Serializers{}

// NewSerializers returns the Serializers of scheme's types.
func NewSerializers(scheme *runtime.Scheme) Serializers {
	s := jsonserializer.NewSerializerWithOptions(MetaFactory, scheme, scheme, jsonserializer.SerializerOptions{})
	return Serializers{scheme: scheme, info: runtime.SerializerInfo{
		MediaType:        runtime.ContentTypeJSON,
		MediaTypeType:    "application",
		MediaTypeSubType: "json",
		EncodesAsText:    true,
		Serializer:       s,
		StreamSerializer: &runtime.StreamSerializerInfo{EncodesAsText: true, Serializer: eventSerializer{s}, Framer: Framer},
	}}
}

// eventSerializer decodes a watch event's envelope without decoding the
// object inside, which client-go then decodes on its own: it takes the
// event's type and the object's bytes off the top-level keys, less the
// object's managedFields (withoutManagedFields). An event it cannot read
// so (watchEvent) goes to the JSON serializer.
type eventSerializer struct {
	runtime.Serializer
}

func (s eventSerializer) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	if event, ok := into.(*metav1.WatchEvent); ok {
		if typ, object, ok := watchEvent(data); ok {
			event.Type = typ
			event.Object = runtime.RawExtension{Raw: withoutManagedFields(object)}
			return event, &schema.GroupVersionKind{}, nil
		}
	}
	return s.Serializer.Decode(data, defaults, into)
}

// SupportedMediaTypes implements runtime.NegotiatedSerializer.
func (s Serializers) SupportedMediaTypes() []runtime.SerializerInfo {
	return []runtime.SerializerInfo{s.info}
}

// EncoderForVersion implements runtime.NegotiatedSerializer.
func (s Serializers) EncoderForVersion(e runtime.Encoder, gv runtime.GroupVersioner) runtime.Encoder {
	return runtime.WithVersionEncoder{Version: gv, Encoder: e, ObjectTyper: s.scheme}
}

// DecoderToVersion implements runtime.NegotiatedSerializer.
func (s Serializers) DecoderToVersion(d runtime.Decoder, _ runtime.GroupVersioner) runtime.Decoder {
	return runtime.WithoutVersionDecoder{Decoder: d}
}

// Resource is one resource of a group version, listed and watched in all
// namespaces.
type Resource struct {
	// GroupVersion and Resource name it: "queueunits" of
	// scheduling.x-k8s.io/v1alpha1, say.
	GroupVersion schema.GroupVersion
	Resource     string
	// NewList returns an empty list of the resource.
	NewList func() runtime.Object
}

// ListWatch lists and watches r in all namespaces with no selector, through
// config and httpClient, decoding with Serializers of scheme; a watch with
// sendInitialEvents (client-go's WatchListClient) streams the list.
func ListWatch(config *rest.Config, httpClient *http.Client, scheme *runtime.Scheme, r Resource) (*toolscache.ListWatch, error) {
	cfg := rest.CopyConfig(config)
	cfg.GroupVersion = &r.GroupVersion
	cfg.APIPath = "/apis"
	if r.GroupVersion.Group == "" {
		cfg.APIPath = "/api"
	}
	cfg.ContentType = runtime.ContentTypeJSON
	cfg.AcceptContentTypes = runtime.ContentTypeJSON
	cfg.NegotiatedSerializer = NewSerializers(scheme)
	client, err := rest.RESTClientForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("making the REST client of %s: %w", r.Resource, err)
	}
	params := runtime.NewParameterCodec(scheme)
	return &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			list := r.NewList()
			if err := client.Get().Resource(r.Resource).VersionedParams(&opts, params).Do(ctx).Into(list); err != nil {
				return nil, err
			}
			return list, nil
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.Watch = true
			return client.Get().Resource(r.Resource).VersionedParams(&opts, params).Watch(ctx)
		},
	}, nil
}

// NewInformerFunc is what a controller-runtime cache calls to make each
// informer (cache.Options.NewInformer).
type NewInformerFunc = func(toolscache.ListerWatcher, runtime.Object, time.Duration, toolscache.Indexers) toolscache.SharedIndexInformer

// NewInformer is a cache's NewInformer under which the informer of
// objects of example's type lists and watches r through ListWatch (with an
// HTTP client of its own, from config), with the indexers indexers returns
// from the cache's (nil: the cache's); every other informer is client-go's,
// as the cache would make it. The cache must not restrict r's informer to
// namespaces or selectors: ListWatch reads every object of r.
func NewInformer(config *rest.Config, scheme *runtime.Scheme, r Resource, example runtime.Object, indexers func(toolscache.Indexers) toolscache.Indexers) (NewInformerFunc, error) {
	httpClient, err := rest.HTTPClientFor(config)
	if err != nil {
		return nil, fmt.Errorf("making the HTTP client of %s: %w", r.Resource, err)
	}
	lw, err := ListWatch(config, httpClient, scheme, r)
	if err != nil {
		return nil, err
	}
	typ := reflect.TypeOf(example)
	return func(cacheLW toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, cacheIndexers toolscache.Indexers) toolscache.SharedIndexInformer {
		if reflect.TypeOf(obj) != typ {
			return toolscache.NewSharedIndexInformer(cacheLW, obj, resync, cacheIndexers)
		}
		if indexers != nil {
			cacheIndexers = indexers(cacheIndexers)
		}
		return toolscache.NewSharedIndexInformer(lw, obj, resync, cacheIndexers)
	}, nil
}
