package options

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
)

// Leader election defaults. A leader that stops cleanly releases its Lease at once; one
// that dies (a killed pod, a lost node) holds it for LeaseDuration, so the
// follower takes over after 10 to 12 seconds (the lease, then up to one
// retry period), not controller-runtime's 15 to 17.
const (
	DefaultLeaseDuration = 10 * time.Second
	DefaultRenewDeadline = 7 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
)

// LeaseSettings are the Lease timings of a binary's leader election.
type LeaseSettings struct {
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// BindLeaseFlags registers
// --leader-elect-{lease-duration,renew-deadline,retry-period} in fs, with
// the defaults, and returns where they land.
func BindLeaseFlags(fs *flag.FlagSet) *LeaseSettings {
	s := &LeaseSettings{}
	fs.DurationVar(&s.LeaseDuration, "leader-elect-lease-duration", DefaultLeaseDuration, "how long followers wait, after the leader's last renewal, before one takes the Lease")
	fs.DurationVar(&s.RenewDeadline, "leader-elect-renew-deadline", DefaultRenewDeadline, "how long the leader keeps trying to renew before it stops leading; shorter than the lease duration")
	fs.DurationVar(&s.RetryPeriod, "leader-elect-retry-period", DefaultRetryPeriod, "how often candidates try to take or renew the Lease; shorter than the renew deadline")
	return s
}

// Validate refuses timings client-go's leader election would refuse at
// start, with the flags' names.
func (s *LeaseSettings) Validate() error {
	var errs []error
	if s.RetryPeriod <= 0 {
		errs = append(errs, fmt.Errorf("--leader-elect-retry-period %v must be positive", s.RetryPeriod))
	}
	if s.RenewDeadline <= s.RetryPeriod {
		errs = append(errs, fmt.Errorf("--leader-elect-renew-deadline %v must be longer than --leader-elect-retry-period %v", s.RenewDeadline, s.RetryPeriod))
	}
	if s.LeaseDuration <= s.RenewDeadline {
		errs = append(errs, fmt.Errorf("--leader-elect-lease-duration %v must be longer than --leader-elect-renew-deadline %v", s.LeaseDuration, s.RenewDeadline))
	}
	return errors.Join(errs...)
}

// Apply sets the timings in opts.
func (s *LeaseSettings) Apply(opts *ctrl.Options) {
	opts.LeaseDuration, opts.RenewDeadline, opts.RetryPeriod = &s.LeaseDuration, &s.RenewDeadline, &s.RetryPeriod
}

// PodNamespace is the namespace the binary's pod runs in (POD_NAMESPACE,
// which the chart sets from the downward API), else
// schedulingv1alpha1.QueueNamespace: the default of the namespaces of its
// Lease and of the Secrets and Services it reads.
func PodNamespace() string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	return schedulingv1alpha1.QueueNamespace
}
