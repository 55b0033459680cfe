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
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/koord-queue/koord-queue/apis"
	configv1 "github.com/koord-queue/koord-queue/apis/config/v1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/cmd/queue/app"
	"github.com/koord-queue/koord-queue/pkg/admission"
	"github.com/koord-queue/koord-queue/pkg/leaderelection"
	kqmetrics "github.com/koord-queue/koord-queue/pkg/metrics"
	"github.com/koord-queue/koord-queue/pkg/probes"
	"github.com/koord-queue/koord-queue/pkg/queue"
	"github.com/koord-queue/koord-queue/pkg/streamedlists"
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
		qps             = flag.Float64("qps", 50, "queries per second to the API server")
		burst           = flag.Int("burst", 100, "burst of queries to the API server")
		leaderElect     = flag.Bool("leader-elect", true, "elect a leader (Lease koord-queue in --leader-elect-namespace); only the leader admits")
		leaderNamespace = flag.String("leader-elect-namespace", leaderelection.PodNamespace(), "namespace of the leader election Lease (default: the pod's, POD_NAMESPACE, else koord-queue)")
		queueNamespace  = flag.String("queue-namespace", schedulingv1alpha1.QueueNamespace, "namespace of the Queues made for the ElasticQuotas; Queues elsewhere are not read")
		metricsAddr     = flag.String("metrics-bind-address", ":10259", "address of /metrics; 0 turns it off")
		metricsSecure   = flag.Bool("metrics-secure", true, "serve /metrics over HTTPS to callers the API server authenticates and authorizes (get on the non-resource URL /metrics); false serves plain HTTP to anyone")
		metricsCertDir  = flag.String("metrics-cert-dir", "", "directory with tls.crt and tls.key for /metrics over HTTPS; empty uses a self-signed certificate")
		probeAddr       = flag.String("health-probe-bind-address", ":10258", "address of /healthz and /readyz")
		pprofAddr       = flag.String("pprof-bind-address", "", "address of Go's /debug/pprof profiles (heap, CPU, goroutines), unauthenticated; empty turns it off")
		visibilityAddr  = flag.String("visibility-bind-address", ":8090", "address of the visibility API; empty turns it off")
		visibilityOpen  = flag.Bool("visibility-insecure-allow-unauthenticated", false, "serve the visibility API to anyone, without a bearer token, every namespace named (by default a token is required, checked with TokenReview, and units are named only where its user may list QueueUnits)")
		visibilityCerts = flag.String("visibility-cert-dir", "", "directory with tls.crt and tls.key for the visibility API over HTTPS, read again when they change; empty uses a self-signed certificate")
		visibilityPlain = flag.Bool("visibility-insecure-serving", false, "serve the visibility API over plain HTTP: bearer tokens and units cross the network in clear")
		tokenAudiences  = flag.String("visibility-token-audiences", "", "comma-separated audiences a bearer token sent to the visibility APIs must be meant for (one of them; TokenReview spec.audiences); empty accepts the API server's own, as ordinary ServiceAccount tokens carry")
		aggAddr         = flag.String("aggregated-api-bind-address", "", "address of the aggregated visibility API (visibility.koord-queue.x-k8s.io/v1alpha1, HTTPS, for the APIService "+v1alpha1.APIServiceName+"); empty turns it off (the chart serves it on :8443)")
		aggCertDir      = flag.String("aggregated-api-cert-dir", "/tmp/koord-queue-aggregated-api/serving-certs", "directory of the aggregated API's tls.crt and tls.key")
		aggRotate       = flag.Bool("aggregated-api-cert-rotation", true, "make and rotate the aggregated API's certificate in --aggregated-api-secret-name, and write its CA into the APIService")
		aggSecretName   = flag.String("aggregated-api-secret-name", "koord-queue-visibility-api-cert", "Secret holding the aggregated API's certificate; it must exist, even empty")
		aggNamespace    = flag.String("aggregated-api-secret-namespace", leaderelection.PodNamespace(), "namespace of --aggregated-api-secret-name and of the aggregated API's Service (default: the pod's, POD_NAMESPACE, else koord-queue)")
		aggServiceName  = flag.String("aggregated-api-service-name", "koord-queue-visibility-api", "Service the APIService sends the aggregated API's requests to")
		writeWorkers    = flag.Int("admission-write-workers", 8, "admissions and evictions written in parallel")
		messageQPS      = flag.Float64("wait-message-qps", 5, "how many 'why this unit waits' status writes per second at most")
		requeueBase     = flag.Duration("admission-check-requeue-base-delay", 10*time.Second, "first backoff after an admission check says Retry or Rejected; doubles each time")
		requeueMax      = flag.Duration("admission-check-requeue-max-delay", 10*time.Minute, "longest backoff after an admission check")
		statusRefresh   = flag.Duration("queue-status-refresh-interval", 15*time.Second, "default time between two writes of a Queue's status (annotation koord-queue/queue-items-refresh-interval overrides)")
		statusTopN      = flag.Int("queue-status-top-n", 20, "how many pending units a Queue's status lists")
		treeCapacity    = flag.Bool("compute-tree-capacity", false, "where no koord-manager runs: compute each quota tree root's capacity from its ElasticQuotaProfile and the nodes (overriding its total-resource annotation), in memory; needs the ElasticQuotaProfile CRD (Koordinator's, or the chart's installElasticQuotaProfileCRD)")
	)
	leaderSettings := leaderelection.BindFlags(flag.CommandLine)
	streamLists := streamedlists.BindFlags(flag.CommandLine)
	opts := zap.Options{}
	opts.BindFlags(flag.CommandLine)
	showVersion := version.Flag(flag.CommandLine)
	flag.Parse()
	if version.PrintIfRequested(os.Stdout, showVersion, "koord-queue") {
		return nil
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	streamedlists.Apply(*streamLists)
	log := ctrl.Log.WithName("koord-queue")
	ctrlmetrics.Registry.MustRegister(version.BuildInfo())

	cfg, err := configv1.Load(*configFile)
	if err != nil {
		return err
	}
	log.Info("Configuration", "plugins", cfg.Plugins, "defaultReclaimProtectTime", cfg.ReclaimProtectTime())

	// --kubeconfig is controller-runtime's flag; without it: $KUBECONFIG, in-cluster, ~/.kube/config.
	restConfig, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w", err)
	}
	restConfig.QPS, restConfig.Burst = float32(*qps), *burst
	restConfig.UserAgent = "koord-queue"

	scheme := k8sruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := apis.AddToScheme(scheme); err != nil {
		return err
	}
	if err := leaderSettings.Validate(); err != nil {
		return err
	}
	cacheOpts, err := app.CacheOptions(*queueNamespace, restConfig)
	if err != nil {
		return err
	}
	mgrOpts := ctrl.Options{
		Scheme:                        scheme,
		Metrics:                       kqmetrics.ServerOptions(*metricsAddr, *metricsSecure, *metricsCertDir),
		HealthProbeBindAddress:        *probeAddr,
		PprofBindAddress:              *pprofAddr,
		LeaderElection:                *leaderElect,
		LeaderElectionID:              "koord-queue",
		LeaderElectionNamespace:       *leaderNamespace,
		LeaderElectionReleaseOnCancel: true,
		Cache:                         cacheOpts,
	}
	leaderSettings.Apply(&mgrOpts)
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
	log.Info("Starting", "version", version.Version, "metrics", *metricsAddr, "visibility", *visibilityAddr, "visibilityTLS", !*visibilityPlain, "tokenAudiences", *tokenAudiences, "aggregatedAPI", *aggAddr, "leaderElection", *leaderElect)
	return mgr.Start(ctx)
}
