// Package integrations lists the job frameworks the extensions support, by
// the names --enabled-extensions takes, and runs the enabled ones in a
// manager.
package integrations

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/koord-queue/koord-queue/pkg/extensions/argo"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
	"github.com/koord-queue/koord-queue/pkg/extensions/job"
	"github.com/koord-queue/koord-queue/pkg/extensions/kubeflow"
	"github.com/koord-queue/koord-queue/pkg/extensions/ray"
	"github.com/koord-queue/koord-queue/pkg/extensions/spark"
)

// EventSource is the component name on the events the extensions record.
const EventSource = "koord-queue-controllers"

// All is every supported framework, in the order the docs list them.
func All() []framework.Integration {
	return []framework.Integration{
		job.Integration(),
		kubeflow.TFJobIntegration(),
		kubeflow.PyTorchJobIntegration(),
		kubeflow.MPIJobIntegration(),
		argo.Integration(),
		ray.RayJobIntegration(),
		ray.RayClusterIntegration(),
		spark.Integration(),
	}
}

// Names are the names of All.
func Names() []string { return NamesOf(All()) }

// NamesOf are the names of integs.
func NamesOf(integs []framework.Integration) []string {
	names := make([]string, 0, len(integs))
	for _, i := range integs {
		names = append(names, i.Name)
	}
	return names
}

// Lookup returns the frameworks named, each once, in the order of All.
func Lookup(names []string) ([]framework.Integration, error) {
	known := Names()
	for _, n := range names {
		if !slices.Contains(known, n) {
			return nil, fmt.Errorf("unknown extension %q; known extensions are %s", n, strings.Join(known, ", "))
		}
	}
	var out []framework.Integration
	for _, i := range All() {
		if slices.Contains(names, i.Name) {
			out = append(out, i)
		}
	}
	return out, nil
}

// AddToScheme registers the Go types of integs.
func AddToScheme(s *runtime.Scheme, integs []framework.Integration) error {
	for _, i := range integs {
		if err := i.AddToScheme(s); err != nil {
			return fmt.Errorf("registering the %s types: %w", i.Name, err)
		}
	}
	return nil
}

// Scope is the framework.Scope of a process that runs integs, which jobs it
// manages, from its --manage-all-jobs and --leave-jobs-submitted-running.
// Only an enabled framework's jobs cover the jobs they make: a job of a
// kind the process does not queue has no unit to be admitted.
func Scope(integs []framework.Integration, manageAllJobs, leaveJobsSubmittedRunning bool) (framework.Scope, error) {
	s := framework.Scope{ManageAllJobs: manageAllJobs, LeaveJobsSubmittedRunning: leaveJobsSubmittedRunning, Jobs: integs}
	for _, i := range integs {
		if i.Makes != nil {
			s.Owners = append(s.Owners, i)
		}
	}
	return s, s.Validate()
}

// Setup adds a reconciler for each of integs to mgr, sharing scope and opts.
func Setup(ctx context.Context, mgr ctrl.Manager, integs []framework.Integration, scope framework.Scope, opts ...framework.Option) error {
	if err := framework.SetupIndexes(ctx, mgr.GetFieldIndexer(), integs...); err != nil {
		return err
	}
	// Units ask for what their pods will hold, LimitRange defaults and
	// RuntimeClass overheads included: their informers start with the
	// manager, so that the first jobs are sized with them.
	if _, err := mgr.GetCache().GetInformer(ctx, &corev1.LimitRange{}); err != nil {
		return fmt.Errorf("watching LimitRanges: %w", err)
	}
	if _, err := mgr.GetCache().GetInformer(ctx, &nodev1.RuntimeClass{}); err != nil {
		return fmt.Errorf("watching RuntimeClasses: %w", err)
	}
	recorder := mgr.GetEventRecorderFor(EventSource)
	for _, i := range integs {
		r := framework.NewJobReconciler(mgr.GetClient(), mgr.GetAPIReader(), recorder, i, append([]framework.Option{framework.WithScope(scope)}, opts...)...)
		if err := r.SetupWithManager(mgr); err != nil {
			return err
		}
	}
	return nil
}

// WithoutUnitSuffixes is integs with every unit named after its job alone
// (no UnitSuffix), as Koord-Queue's extensions name them when run with the
// environment variable PAI_ENV set, so that those units are adopted.
func WithoutUnitSuffixes(integs []framework.Integration) []framework.Integration {
	out := slices.Clone(integs)
	for i := range out {
		out[i].UnitSuffix = ""
	}
	return out
}
