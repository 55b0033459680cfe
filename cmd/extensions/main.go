// Command koord-queue-controllers runs the job extensions: for each enabled
// framework it turns the jobs the queue manages into QueueUnits, releases a
// job when the queue admits its unit, suspends it when the unit is evicted,
// and keeps the unit's status true to the job. A managed job found running
// without a unit is suspended until its unit is admitted; with
// --enable-webhook such jobs are suspended as they are created.
package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"strings"
	"time"

	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/koord-queue/koord-queue/apis"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
	"github.com/koord-queue/koord-queue/pkg/extensions/integrations"
	"github.com/koord-queue/koord-queue/pkg/extensions/webhook"
	"github.com/koord-queue/koord-queue/pkg/options"
	"github.com/koord-queue/koord-queue/pkg/probes"
	"github.com/koord-queue/koord-queue/pkg/version"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "koord-queue-controllers: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	namespace := options.PodNamespace()
	var (
		enabled         = flag.String("enabled-extensions", "job", "comma-separated extensions to run, of: "+strings.Join(integrations.Names(), ", "))
		manageAll       = flag.Bool("manage-all-jobs", false, "queue every job of an enabled kind, with or without a quota label, and suspend those submitted running until their unit is admitted")
		leaveRunning    = flag.Bool("leave-jobs-submitted-running", false, "compatibility with Koord-Queue v1.8: leave a job that names a quota but is submitted running to run unqueued, instead of suspending it until its unit is admitted")
		enableWebhook   = flag.Bool("enable-webhook", false, "serve the mutating webhook that suspends managed jobs submitted running")
		webhookPort     = flag.Int("webhook-port", 9443, "port of the webhook server")
		certDir         = flag.String("webhook-cert-dir", "/tmp/k8s-webhook-server/serving-certs", "directory of the webhook's tls.crt and tls.key")
		rotateCerts     = flag.Bool("webhook-cert-rotation", true, "make and rotate the webhook certificate in --webhook-secret-name, and write its CA into --webhook-config-name")
		secretName      = flag.String("webhook-secret-name", "koord-queue-controllers-webhook-cert", "Secret holding the webhook certificate; it must exist, even empty")
		secretNamespace = flag.String("webhook-secret-namespace", namespace, "namespace of --webhook-secret-name and of the webhook Service")
		serviceName     = flag.String("webhook-service-name", "koord-queue-controllers-webhook", "Service the API server calls the webhook through")
		configName      = flag.String("webhook-config-name", "koord-queue-controllers", "MutatingWebhookConfiguration to write the CA into")
		noUnitSuffix    = flag.Bool("unit-names-without-suffix", false, "compatibility with Koord-Queue v1.8 run with the environment variable PAI_ENV: name every job's QueueUnit after the job alone, without its framework's suffix (-tf-qu, -py-qu, -mpi-qu, -ray-qu, -raycluster-qu, -spark-qu), so that the units it made are adopted. Two jobs of different kinds and one name in a namespace then want the same unit name: the second is not queued (QueueUnitNameTaken)")
		runningTimeout  = flag.Duration("job-running-timeout", 0, "suspend a released job none of whose pods runs within this long, send its QueueUnit to TimeoutBackoff (its quota given back once the pods are gone) and queue it again after --job-backoff-time; 0 never times out")
		backoffTime     = flag.Duration("job-backoff-time", 0, "how long a QueueUnit stays in TimeoutBackoff after --job-running-timeout before it is queued again (Enqueued); 0 queues it again at once. A unit Koord-Queue left in TimeoutBackoff is queued again this long after its last update")
		statusDelay     = flag.Duration("unit-status-delay", framework.DefaultStatusDelay, "how long a QueueUnit's pod counts may lag its job's, so that a burst of pod changes is one write; phase changes and quota given back are written at once; 0 writes every change")
		maxPriority     = flag.Int64("max-unit-priority", int64(framework.HighestUserDefinablePriority), "the highest priority a QueueUnit may take from the PriorityClass its job names; a class of a higher value gives the default priority, with a Warning event PriorityClassNotAllowed on the job. The default is the highest value Kubernetes lets a user's PriorityClass have")
		maxExecTime     = flag.Duration("max-declared-execution-time", framework.DefaultMaxDeclaredExecutionTime, "the most a job's label koord-queue/max-exec-time-seconds (or Kueue's kueue.x-k8s.io/max-exec-time-seconds) may declare, in whole seconds: a label declaring more gives its QueueUnit this spec.maximumExecutionTimeSeconds, with a Warning event MaxExecTimeCapped on the job. It is a deadline: a unit admitted that long is deactivated and its job suspended. The default is as far ahead as the forecast looks")
		systemClasses   = flag.String("allowed-system-priority-classes", "", "comma-separated system PriorityClasses (system-node-critical, system-cluster-critical) whose value a QueueUnit may take, whatever --max-unit-priority; a job naming another gets the default priority, with a Warning event PriorityClassNotAllowed")
	)
	shared := options.AddManagerFlags(flag.CommandLine, options.Binary{Name: "koord-queue-controllers", Leads: "reconciles", MetricsAddress: ":8080", ProbeAddress: ":8081"})
	flag.Parse()
	if shared.Start(os.Stdout) {
		return nil
	}
	log := ctrl.Log.WithName("koord-queue-controllers")

	integs, err := integrations.Lookup(splitList(*enabled))
	if err != nil {
		return err
	}
	if *noUnitSuffix {
		integs = integrations.WithoutUnitSuffixes(integs)
	}
	scope, err := integrations.Scope(integs, *manageAll, *leaveRunning)
	if err != nil {
		return err
	}
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
	if err := integrations.AddToScheme(scheme, integs); err != nil {
		return err
	}
	if err := shared.Validate(); err != nil {
		return err
	}
	// Nothing here reads managedFields, and the API server keeps them on
	// writes that leave them out. Every pod of the cluster is watched, to
	// count the jobs' pods on nodes: each is kept stripped; so are
	// QueueUnits' labels and annotations, copies of their jobs'.
	cacheOpts, err := framework.CacheOptions(restConfig)
	if err != nil {
		return err
	}
	mgrOpts := ctrl.Options{
		Scheme:        scheme,
		WebhookServer: ctrlwebhook.NewServer(ctrlwebhook.Options{Port: *webhookPort, CertDir: *certDir}),
		Cache:         cacheOpts,
	}
	shared.Apply(&mgrOpts)
	mgr, err := ctrl.NewManager(restConfig, mgrOpts)
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	ctx := ctrl.SetupSignalHandler()
	if *runningTimeout < 0 || *backoffTime < 0 {
		return fmt.Errorf("--job-running-timeout %s and --job-backoff-time %s must not be negative", *runningTimeout, *backoffTime)
	}
	if *maxPriority < math.MinInt32 || *maxPriority > math.MaxInt32 {
		return fmt.Errorf("--max-unit-priority %d is no priority: priorities are 32-bit integers", *maxPriority)
	}
	if *maxExecTime < time.Second || *maxExecTime%time.Second != 0 || *maxExecTime > math.MaxInt32*time.Second {
		return fmt.Errorf("--max-declared-execution-time %s must be whole seconds, from 1s to %d s (what a QueueUnit's spec.maximumExecutionTimeSeconds holds)", *maxExecTime, math.MaxInt32)
	}
	priorities := framework.PriorityLimit{Max: int32(*maxPriority), AllowedSystem: splitList(*systemClasses)}
	// The webhook and the reconcilers count the pods each other let
	// through before the cache shows them.
	slots := framework.NewSlotExpectations(clock.RealClock{})
	if err := integrations.Setup(ctx, mgr, integs, scope, framework.WithSlotExpectations(slots), framework.WithStatusDelay(*statusDelay),
		framework.WithRunningTimeout(*runningTimeout, *backoffTime), framework.WithPriorityLimit(priorities),
		framework.WithMaxDeclaredExecutionTime(*maxExecTime)); err != nil {
		return err
	}
	if *enableWebhook {
		err := webhook.Setup(mgr, webhook.Options{
			CertDir:    *certDir,
			Rotate:     *rotateCerts,
			Secret:     types.NamespacedName{Namespace: *secretNamespace, Name: *secretName},
			ConfigName: *configName,
			DNSName:    fmt.Sprintf("%s.%s.svc", *serviceName, *secretNamespace),
			Slots:      slots,
		}, integs, scope)
		if err != nil {
			return err
		}
	}
	if err := probes.Add(mgr); err != nil {
		return err
	}
	log.Info("Starting", "version", version.Version, "extensions", integrations.NamesOf(integs), "manageAllJobs", *manageAll, "leaveJobsSubmittedRunning", *leaveRunning,
		"webhook", *enableWebhook, "metrics", shared.MetricsAddress, "leaderElection", shared.LeaderElect, "jobRunningTimeout", *runningTimeout, "jobBackoffTime", *backoffTime, "unitNamesWithoutSuffix", *noUnitSuffix,
		"maxUnitPriority", priorities.Max, "allowedSystemPriorityClasses", priorities.AllowedSystem, "maxDeclaredExecutionTime", *maxExecTime)
	return mgr.Start(ctx)
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
