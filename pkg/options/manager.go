// Package options holds the command-line options both binaries' managers
// share: the API client's rate, leader election (with the defaults that
// make a follower take over from a leader that died without releasing its
// Lease in about 10 seconds), the metrics and health probe endpoints,
// logging, streamed lists, the pprof endpoint and --version. cluster-api keeps its managers'
// shared flags the same way (util/flags). Each binary keeps its own flags
// in its main.
package options

import (
	"flag"
	"fmt"
	"io"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	kqmetrics "github.com/koord-queue/koord-queue/pkg/metrics"
	"github.com/koord-queue/koord-queue/pkg/streamedlists"
	"github.com/koord-queue/koord-queue/pkg/version"
)

// Binary is what differs between the binaries in the shared options.
type Binary struct {
	// Name is the binary's: its user agent, its Lease and its --version.
	Name string
	// Leads is what only the leader does, for --leader-elect's help.
	Leads string
	// MetricsAddress and ProbeAddress are the defaults of
	// --metrics-bind-address and --health-probe-bind-address.
	MetricsAddress, ProbeAddress string
}

// Manager is what the shared flags set, once parsed.
type Manager struct {
	binary Binary

	QPS   float64
	Burst int

	LeaderElect          bool
	LeaderElectNamespace string
	Lease                *LeaseSettings

	MetricsAddress string
	MetricsSecure  bool
	MetricsCertDir string
	ProbeAddress   string
	PprofAddress   string

	streamLists *bool
	zap         zap.Options
	version     *bool
}

// AddManagerFlags registers the shared flags in fs, with b's defaults, and
// returns where they land. --kubeconfig is controller-runtime's own.
func AddManagerFlags(fs *flag.FlagSet, b Binary) *Manager {
	m := &Manager{binary: b}
	fs.Float64Var(&m.QPS, "qps", 50, "queries per second to the API server")
	fs.IntVar(&m.Burst, "burst", 100, "burst of queries to the API server")
	fs.BoolVar(&m.LeaderElect, "leader-elect", true, fmt.Sprintf("elect a leader (Lease %s in --leader-elect-namespace); only the leader %s", b.Name, b.Leads))
	fs.StringVar(&m.LeaderElectNamespace, "leader-elect-namespace", PodNamespace(), "namespace of the leader election Lease (default: the pod's, POD_NAMESPACE, else koord-queue)")
	m.Lease = BindLeaseFlags(fs)
	fs.StringVar(&m.MetricsAddress, "metrics-bind-address", b.MetricsAddress, "address of /metrics; 0 turns it off")
	fs.BoolVar(&m.MetricsSecure, "metrics-secure", true, "serve /metrics over HTTPS to callers the API server authenticates and authorizes (get on the non-resource URL /metrics); false serves plain HTTP to anyone")
	fs.StringVar(&m.MetricsCertDir, "metrics-cert-dir", "", "directory with tls.crt and tls.key for /metrics over HTTPS; empty uses a self-signed certificate")
	fs.StringVar(&m.ProbeAddress, "health-probe-bind-address", b.ProbeAddress, "address of /healthz and /readyz")
	fs.StringVar(&m.PprofAddress, "pprof-bind-address", "", "address of Go's /debug/pprof profiles (heap, CPU, goroutines), unauthenticated; empty turns it off")
	m.streamLists = streamedlists.BindFlags(fs)
	m.zap.BindFlags(fs)
	m.version = version.Flag(fs)
	return m
}

// Start acts on the parsed flags before anything else runs: it prints the
// version to w and says to stop, if --version was given; otherwise it sets
// controller-runtime's logger, turns streamed lists on or off and registers
// the build info metric.
func (m *Manager) Start(w io.Writer) (stop bool) {
	if version.PrintIfRequested(w, m.version, m.binary.Name) {
		return true
	}
	ctrl.SetLogger(logr.New(deferValues(zap.New(zap.UseFlagOptions(&m.zap)).GetSink())))
	streamedlists.Apply(*m.streamLists)
	ctrlmetrics.Registry.MustRegister(version.BuildInfo())
	return false
}

// RESTConfig is the kubeconfig (--kubeconfig, else $KUBECONFIG, in-cluster
// or ~/.kube/config) with the flags' rate and the binary's user agent.
func (m *Manager) RESTConfig() (*rest.Config, error) {
	config, err := ctrl.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	config.QPS, config.Burst = float32(m.QPS), m.Burst
	config.UserAgent = m.binary.Name
	return config, nil
}

// Validate refuses flags the manager would refuse at start, with their
// names.
func (m *Manager) Validate() error { return m.Lease.Validate() }

// Apply sets in opts the metrics, probe and pprof endpoints and the leader
// election, whose Lease is named for the binary and released on a clean
// stop.
func (m *Manager) Apply(opts *ctrl.Options) {
	opts.Metrics = kqmetrics.ServerOptions(m.MetricsAddress, m.MetricsSecure, m.MetricsCertDir)
	opts.HealthProbeBindAddress = m.ProbeAddress
	opts.PprofBindAddress = m.PprofAddress
	opts.LeaderElection = m.LeaderElect
	opts.LeaderElectionID = m.binary.Name
	opts.LeaderElectionNamespace = m.LeaderElectNamespace
	opts.LeaderElectionReleaseOnCancel = true
	m.Lease.Apply(opts)
}
