package options

import (
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	ctrl "sigs.k8s.io/controller-runtime"
)

func TestLeaseFlags(t *testing.T) {
	cases := []struct {
		name    string
		args    []string
		want    LeaseSettings
		wantErr string
	}{
		{name: "defaults", want: LeaseSettings{LeaseDuration: 10 * time.Second, RenewDeadline: 7 * time.Second, RetryPeriod: 2 * time.Second}},
		{
			name: "set",
			args: []string{"--leader-elect-lease-duration=30s", "--leader-elect-renew-deadline=20s", "--leader-elect-retry-period=5s"},
			want: LeaseSettings{LeaseDuration: 30 * time.Second, RenewDeadline: 20 * time.Second, RetryPeriod: 5 * time.Second},
		},
		{
			name:    "a renew deadline past the lease",
			args:    []string{"--leader-elect-renew-deadline=15s"},
			want:    LeaseSettings{LeaseDuration: 10 * time.Second, RenewDeadline: 15 * time.Second, RetryPeriod: 2 * time.Second},
			wantErr: "--leader-elect-lease-duration 10s must be longer than --leader-elect-renew-deadline 15s",
		},
		{
			name:    "no retry period",
			args:    []string{"--leader-elect-retry-period=0s"},
			want:    LeaseSettings{LeaseDuration: 10 * time.Second, RenewDeadline: 7 * time.Second},
			wantErr: "--leader-elect-retry-period 0s must be positive",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			s := BindLeaseFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, *s); diff != "" {
				t.Errorf("settings (-want +got):\n%s", diff)
			}
			err := s.Validate()
			if tc.wantErr == "" && err != nil {
				t.Errorf("Validate() = %v, want nil", err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("Validate() = %v, want an error containing %q", err, tc.wantErr)
			}
			var opts ctrl.Options
			s.Apply(&opts)
			if *opts.LeaseDuration != s.LeaseDuration || *opts.RenewDeadline != s.RenewDeadline || *opts.RetryPeriod != s.RetryPeriod {
				t.Errorf("Apply set %v/%v/%v, want %+v", *opts.LeaseDuration, *opts.RenewDeadline, *opts.RetryPeriod, *s)
			}
		})
	}
}
