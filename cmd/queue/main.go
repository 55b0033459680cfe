// Command koord-queue turns ElasticQuotas into Queues, admits QueueUnits
// against quota in the order each queue's policy gives, and serves the
// visibility API and Prometheus metrics.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"
	"unicode"

	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/koord-queue/koord-queue/apis"
	configv1 "github.com/koord-queue/koord-queue/apis/config/v1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/cmd/queue/app"
	"github.com/koord-queue/koord-queue/pkg/admission"
	"github.com/koord-queue/koord-queue/pkg/options"
	"github.com/koord-queue/koord-queue/pkg/probes"
	"github.com/koord-queue/koord-queue/pkg/queue"
	"github.com/koord-queue/koord-queue/pkg/version"
	"github.com/koord-queue/koord-queue/pkg/visibility/api/v1alpha1"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "koord-queue: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	started := time.Now()
	var (
		configFile      = flag.String("config", "", "path to a KoordQueueConfiguration file (default: Priority and ElasticQuotaV2 plugins)")
		queueNamespace  = flag.String("queue-namespace", schedulingv1alpha1.QueueNamespace, "namespace of the Queues made for the ElasticQuotas; Queues elsewhere are not read")
		visibilityAddr  = flag.String("visibility-bind-address", ":8090", "address of the visibility API; empty turns it off")
		visibilityOpen  = flag.Bool("visibility-insecure-allow-unauthenticated", false, "serve the visibility API to anyone, without a bearer token, every namespace named (by default a token is required, checked with TokenReview, and units are named only where its user may list QueueUnits)")
		visibilityCerts = flag.String("visibility-cert-dir", "", "directory with tls.crt and tls.key for the visibility API over HTTPS, read again when they change; empty uses a self-signed certificate")
		visibilityPlain = flag.Bool("visibility-insecure-serving", false, "serve the visibility API over plain HTTP: bearer tokens and units cross the network in clear")
		tokenAudiences  = flag.String("visibility-token-audiences", "", "comma-separated audiences a bearer token sent to the visibility APIs must be meant for (one of them; TokenReview spec.audiences); empty accepts the API server's own, as ordinary ServiceAccount tokens carry")
		aggAddr         = flag.String("aggregated-api-bind-address", "", "address of the aggregated visibility API (visibility.koord-queue.x-k8s.io/v1alpha1, HTTPS, for the APIService "+v1alpha1.APIServiceName+"); empty turns it off (the chart serves it on :8443)")
		aggCertDir      = flag.String("aggregated-api-cert-dir", "/tmp/koord-queue-aggregated-api/serving-certs", "directory of the aggregated API's tls.crt and tls.key")
		aggRotate       = flag.Bool("aggregated-api-cert-rotation", true, "make and rotate the aggregated API's certificate in --aggregated-api-secret-name, and write its CA into the APIService")
		aggSecretName   = flag.String("aggregated-api-secret-name", "koord-queue-visibility-api-cert", "Secret holding the aggregated API's certificate; it must exist, even empty")
		aggNamespace    = flag.String("aggregated-api-secret-namespace", options.PodNamespace(), "namespace of --aggregated-api-secret-name and of the aggregated API's Service (default: the pod's, POD_NAMESPACE, else koord-queue)")
		aggServiceName  = flag.String("aggregated-api-service-name", "koord-queue-visibility-api", "Service the APIService sends the aggregated API's requests to")
		writeWorkers    = flag.Int("admission-write-workers", 8, "admissions and evictions written in parallel")
		messageQPS      = flag.Float64("wait-message-qps", 5, "how many 'why this unit waits' status writes per second at most")
		requeueBase     = flag.Duration("admission-check-requeue-base-delay", 10*time.Second, "first backoff after an admission check says Retry or Rejected; doubles each time")
		requeueMax      = flag.Duration("admission-check-requeue-max-delay", 10*time.Minute, "longest backoff after an admission check")
		statusRefresh   = flag.Duration("queue-status-refresh-interval", 15*time.Second, "default time between two writes of a Queue's status (annotation koord-queue/queue-items-refresh-interval overrides)")
		statusTopN      = flag.Int("queue-status-top-n", 20, "how many pending units a Queue's status lists")
		treeCapacity    = flag.Bool("compute-tree-capacity", false, "where no koord-manager runs: compute each quota tree root's capacity from its ElasticQuotaProfile and the nodes (overriding its total-resource annotation), in memory; needs the ElasticQuotaProfile CRD (Koordinator's, or the chart's installElasticQuotaProfileCRD)")
	)
	shared := options.AddManagerFlags(flag.CommandLine, options.Binary{Name: "koord-queue", Leads: "admits", MetricsAddress: ":10259", ProbeAddress: ":10258"})
	flag.Parse()
	if shared.Start(os.Stdout) {
		return nil
	}
	log := ctrl.Log.WithName("koord-queue")

	cfg, err := configv1.Load(*configFile)
	if err != nil {
		return err
	}
	log.Info("Configuration", "plugins", cfg.Plugins, "defaultReclaimProtectTime", cfg.ReclaimProtectTime())

	restConfig, err := shared.RESTConfig()
	if err != nil {
		return err
	}

	scheme := k8sruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := apis.AddToScheme(scheme); err != nil {
		return err
	}
	if err := shared.Validate(); err != nil {
		return err
	}
	cacheOpts, err := app.CacheOptions(*queueNamespace, restConfig)
	if err != nil {
		return err
	}
	mgrOpts := ctrl.Options{
		Scheme: scheme,
		Cache:  cacheOpts,
	}
	shared.Apply(&mgrOpts)
	mgr, err := ctrl.NewManager(restConfig, mgrOpts)
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	ctx := ctrl.SetupSignalHandler()
	_, err = app.Setup(ctx, mgr, app.Options{
		QueueNamespace:                         *queueNamespace,
		VisibilityAddress:                      *visibilityAddr,
		VisibilityInsecureAllowUnauthenticated: *visibilityOpen,
		VisibilityCertDir:                      *visibilityCerts,
		VisibilityInsecureServing:              *visibilityPlain,
		VisibilityTokenAudiences:               strings.FieldsFunc(*tokenAudiences, func(r rune) bool { return r == ',' || unicode.IsSpace(r) }),
		AggregatedAPI: app.AggregatedAPIOptions{
			Address: *aggAddr,
			CertDir: *aggCertDir,
			Rotate:  *aggRotate,
			Secret:  types.NamespacedName{Namespace: *aggNamespace, Name: *aggSecretName},
			DNSName: fmt.Sprintf("%s.%s.svc", *aggServiceName, *aggNamespace),
		},
		Admission: admission.Options{
			ReclaimProtection:   cfg.ReclaimProtectTime(),
			ComputeTreeCapacity: *treeCapacity,
			ProcessStart:        started,
			Writer:              admission.WriterOptions{Workers: *writeWorkers, MessageQPS: *messageQPS, RequeueBaseDelay: *requeueBase, RequeueMaxDelay: *requeueMax},
		},
		QueueStatus: queue.StatusOptions{RefreshInterval: *statusRefresh, TopN: *statusTopN},
	})
	if err != nil {
		return err
	}
	if err := probes.Add(mgr); err != nil {
		return err
	}
	log.Info("Starting", "version", version.Version, "metrics", shared.MetricsAddress, "visibility", *visibilityAddr, "visibilityTLS", !*visibilityPlain, "tokenAudiences", *tokenAudiences, "aggregatedAPI", *aggAddr, "leaderElection", shared.LeaderElect)
	return mgr.Start(ctx)
}
