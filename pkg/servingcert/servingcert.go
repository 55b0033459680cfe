// Package servingcert gives a server of koord-queue or
// koord-queue-controllers its TLS serving certificate the way the API
// server needs it: made and rotated in a Secret by cert-controller's
// rotator, its CA written into what the API server calls the server through
// (a MutatingWebhookConfiguration, an APIService), and the Secret's
// tls.crt and tls.key copied to a directory on every replica, leader or not.
// Both binaries use it: the webhook and the aggregated visibility API.
package servingcert

import (
	"fmt"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
)

// Options configure one server's certificate.
type Options struct {
	// CertDir receives tls.crt and tls.key: an emptyDir (or the Secret
	// mounted) will do.
	CertDir string
	// Rotate makes and rotates the certificate in Secret and writes its CA
	// into Targets. Without it, the certificate in CertDir is someone
	// else's to provide, and the other fields are not used.
	Rotate bool
	// Secret holds the certificate; it must exist, even empty.
	Secret types.NamespacedName
	// DNSName is the name the API server calls the server by, such as
	// koord-queue-controllers-webhook.koord-queue.svc.
	DNSName string
	// Targets get the CA bundle: webhook configurations, APIServices.
	Targets []rotator.WebhookInfo
	// RotatorName names the rotator's controller; empty is cert-rotator.
	// Controller names are unique in a process, so two rotators in one
	// (two replicas in a test, say) need two names.
	RotatorName string
}

// Setup adds the rotator of opts' certificate and the copy of its files to
// mgr, both on every replica. The returned channel is closed once the
// files are in CertDir and the CA is in every target (at once without
// Rotate): start serving then.
func Setup(mgr ctrl.Manager, opts Options) (<-chan struct{}, error) {
	ready := make(chan struct{})
	if !opts.Rotate {
		close(ready)
		return ready, nil
	}
	// The rotator watches the Secrets of its Secret's namespace: through
	// withOneSecret, its own alone.
	err := rotator.AddRotator(withOneSecret(mgr, opts.Secret), &rotator.CertRotator{
		SecretKey:      opts.Secret,
		ControllerName: opts.RotatorName,
		CertDir:        opts.CertDir,
		CAName:         "koord-queue-ca",
		CAOrganization: "koord-queue",
		DNSName:        opts.DNSName,
		IsReady:        ready,
		Webhooks:       opts.Targets,
		// Every replica serves, so every replica needs the certificate,
		// leader or not.
		RequireLeaderElection: false,
	})
	if err != nil {
		return nil, fmt.Errorf("adding the certificate rotator of %s: %w", opts.Secret, err)
	}
	if err := syncFiles(mgr, opts.Secret, opts.CertDir); err != nil {
		return nil, err
	}
	return ready, nil
}
