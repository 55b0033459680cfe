package webhook

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
	"github.com/koord-queue/koord-queue/pkg/servingcert"
)

// Options configures the webhook.
type Options struct {
	// CertDir holds tls.crt and tls.key. With Rotate the controller writes
	// them there from Secret itself: an emptyDir (or the Secret mounted) will do.
	CertDir string
	// Rotate makes and rotates the certificate in Secret and writes its CA
	// into the MutatingWebhookConfiguration ConfigName. Without it, the
	// certificate in CertDir is someone else's to provide.
	Rotate bool
	// Secret holds the certificate; it must exist, even empty.
	Secret types.NamespacedName
	// ConfigName is the MutatingWebhookConfiguration to write the CA into.
	ConfigName string
	// DNSName is the name the API server calls the webhook by, such as
	// koord-queue-controllers-webhook.koord-queue.svc.
	DNSName string
	// Slots are the pods the gate let through that the cache does not
	// show yet: the job reconcilers' (framework.WithSlotExpectations), so
	// that the webhook and the reconcilers each count what the others let
	// through. Nil gives the webhook its own.
	Slots *framework.SlotExpectations
	// RotatorName names the rotator's controller; empty is cert-rotator.
	// Controller names are unique in a process, so two replicas run in one
	// (a test) need two names.
	RotatorName string
}

// Setup adds the webhook of each integration, and the pod webhook, to mgr. With Rotate, the
// webhook server starts once the certificate is ready. The manager's
// readiness check waits for the webhook server to start.
func Setup(mgr ctrl.Manager, opts Options, integs []framework.Integration, scope framework.Scope) error {
	ready, err := servingcert.Setup(mgr, servingcert.Options{
		CertDir:     opts.CertDir,
		Rotate:      opts.Rotate,
		Secret:      opts.Secret,
		DNSName:     opts.DNSName,
		Targets:     []rotator.WebhookInfo{{Name: opts.ConfigName, Type: rotator.Mutating}},
		RotatorName: opts.RotatorName,
	})
	if err != nil {
		return fmt.Errorf("the webhook certificate: %w", err)
	}

	decoder := admission.NewDecoder(mgr.GetScheme())
	slots := opts.Slots
	if slots == nil {
		slots = framework.NewSlotExpectations(clock.RealClock{})
	}
	started := make(chan struct{})
	go func() {
		<-ready
		// Asking for the webhook server adds it to the manager, which
		// starts it: only now are the certificate files there to load.
		server := mgr.GetWebhookServer()
		server.Register(PodPath, &admission.Webhook{Handler: &podGater{
			gate: framework.NewPodGate(mgr.GetClient(), mgr.GetAPIReader(), mgr.GetScheme(), integs, scope, slots), decoder: decoder,
		}})
		for _, integ := range integs {
			server.Register(Path(integ), &admission.Webhook{Handler: &suspender{
				integ: integ, scope: scope, reader: mgr.GetClient(), decoder: decoder,
			}})
		}
		close(started)
	}()
	return mgr.AddReadyzCheck("webhook", func(req *http.Request) error {
		select {
		case <-started:
			return mgr.GetWebhookServer().StartedChecker()(req)
		default:
			return errors.New("the webhook certificate is not ready yet")
		}
	})
}
