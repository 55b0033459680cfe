package options

import (
	"flag"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	ctrl "sigs.k8s.io/controller-runtime"
)

// managerOptions is what Apply sets in a manager's options, in a form cmp
// compares.
type managerOptions struct {
	MetricsAddress, ProbeAddress    string
	PprofAddress                    string
	MetricsSecure                   bool
	LeaderElection, ReleaseOnCancel bool
	LeaseID, LeaseNamespace         string
	LeaseDuration                   time.Duration
}

func TestManagerFlags(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "kq-system")
	queue := Binary{Name: "koord-queue", Leads: "admits", MetricsAddress: ":10259", ProbeAddress: ":10258"}
	controllers := Binary{Name: "koord-queue-controllers", Leads: "reconciles", MetricsAddress: ":8080", ProbeAddress: ":8081"}
	cases := []struct {
		name          string
		binary        Binary
		args          []string
		wantOptions   managerOptions
		wantQPS       float64
		wantBurst     int
		wantLeaderUse string
	}{
		{
			name:   "each binary gets its own endpoints and Lease by default",
			binary: queue,
			wantOptions: managerOptions{MetricsAddress: ":10259", ProbeAddress: ":10258", MetricsSecure: true,
				LeaderElection: true, ReleaseOnCancel: true, LeaseID: "koord-queue", LeaseNamespace: "kq-system", LeaseDuration: DefaultLeaseDuration},
			wantQPS: 50, wantBurst: 100,
			wantLeaderUse: "elect a leader (Lease koord-queue in --leader-elect-namespace); only the leader admits",
		},
		{
			name:   "the controllers' defaults differ only in what the binary names",
			binary: controllers,
			wantOptions: managerOptions{MetricsAddress: ":8080", ProbeAddress: ":8081", MetricsSecure: true,
				LeaderElection: true, ReleaseOnCancel: true, LeaseID: "koord-queue-controllers", LeaseNamespace: "kq-system", LeaseDuration: DefaultLeaseDuration},
			wantQPS: 50, wantBurst: 100,
			wantLeaderUse: "elect a leader (Lease koord-queue-controllers in --leader-elect-namespace); only the leader reconciles",
		},
		{
			name:   "flags given override the defaults",
			binary: queue,
			args: []string{"--qps=20", "--burst=40", "--leader-elect=false", "--leader-elect-namespace=other",
				"--leader-elect-lease-duration=30s", "--metrics-bind-address=0", "--metrics-secure=false", "--health-probe-bind-address=:9000",
				"--pprof-bind-address=localhost:6060"},
			wantOptions: managerOptions{MetricsAddress: "0", ProbeAddress: ":9000", PprofAddress: "localhost:6060",
				ReleaseOnCancel: true, LeaseID: "koord-queue", LeaseNamespace: "other", LeaseDuration: 30 * time.Second},
			wantQPS: 20, wantBurst: 40,
			wantLeaderUse: "elect a leader (Lease koord-queue in --leader-elect-namespace); only the leader admits",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			m := AddManagerFlags(fs, tc.binary)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			if err := m.Validate(); err != nil {
				t.Fatalf("Validate() = %v", err)
			}
			var opts ctrl.Options
			m.Apply(&opts)
			got := managerOptions{
				MetricsAddress: opts.Metrics.BindAddress, ProbeAddress: opts.HealthProbeBindAddress, PprofAddress: opts.PprofBindAddress, MetricsSecure: opts.Metrics.SecureServing,
				LeaderElection: opts.LeaderElection, ReleaseOnCancel: opts.LeaderElectionReleaseOnCancel,
				LeaseID: opts.LeaderElectionID, LeaseNamespace: opts.LeaderElectionNamespace, LeaseDuration: *opts.LeaseDuration,
			}
			if diff := cmp.Diff(tc.wantOptions, got); diff != "" {
				t.Errorf("manager options (-want +got):\n%s", diff)
			}
			if m.QPS != tc.wantQPS || m.Burst != tc.wantBurst {
				t.Errorf("QPS, burst = %v, %v, want %v, %v", m.QPS, m.Burst, tc.wantQPS, tc.wantBurst)
			}
			if got := fs.Lookup("leader-elect").Usage; got != tc.wantLeaderUse {
				t.Errorf("--leader-elect's help = %q, want %q", got, tc.wantLeaderUse)
			}
		})
	}
}

func TestManagerFlagsRegisterWhatBothBinariesShare(t *testing.T) {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	AddManagerFlags(fs, Binary{Name: "b"})
	var got []string
	fs.VisitAll(func(f *flag.Flag) { got = append(got, f.Name) })
	want := []string{"burst", "health-probe-bind-address", "leader-elect", "leader-elect-lease-duration", "leader-elect-namespace",
		"leader-elect-renew-deadline", "leader-elect-retry-period", "metrics-bind-address", "metrics-cert-dir", "metrics-secure",
		"pprof-bind-address",
		"qps", "stream-initial-lists", "version", "zap-devel", "zap-encoder", "zap-log-level", "zap-stacktrace-level", "zap-time-encoding"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("flags (-want +got):\n%s", diff)
	}
}
