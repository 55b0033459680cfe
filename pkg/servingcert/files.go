package servingcert

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// certFiles are the files of the certificate Secret a server reads.
var certFiles = []string{corev1.TLSCertKey, corev1.TLSPrivateKeyKey}

// syncFiles keeps the certificate files in dir equal to the Secret's
// data, so that the server serves the rotator's certificate as soon as it
// is made or renewed: without a Secret volume (an emptyDir is enough), and
// without waiting the minute or more the kubelet takes to refresh one. It
// watches that one Secret only. Where the Secret is mounted read-only the
// files already match, and nothing is written.
func syncFiles(mgr ctrl.Manager, secret types.NamespacedName, dir string) error {
	c, err := cache.New(mgr.GetConfig(), cache.Options{
		Scheme:            mgr.GetScheme(),
		Mapper:            mgr.GetRESTMapper(),
		DefaultNamespaces: map[string]cache.Config{secret.Namespace: {}},
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Secret{}: {Field: fields.OneTermEqualSelector("metadata.name", secret.Name)},
		},
	})
	if err != nil {
		return fmt.Errorf("creating the cache of the certificate Secret: %w", err)
	}
	informer, err := c.GetInformer(context.Background(), &corev1.Secret{})
	if err != nil {
		return fmt.Errorf("watching the certificate Secret: %w", err)
	}
	log := mgr.GetLogger().WithName("cert-files").WithValues("secret", secret)
	write := func(obj any) {
		s, ok := obj.(*corev1.Secret)
		if !ok || s.Name != secret.Name {
			return
		}
		if err := writeCertFiles(dir, s.Data); err != nil {
			log.Error(err, "Writing the certificate files", "dir", dir)
		}
	}
	if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    write,
		UpdateFunc: func(_, obj any) { write(obj) },
	}); err != nil {
		return fmt.Errorf("watching the certificate Secret: %w", err)
	}
	return mgr.Add(everyReplica{c})
}

// everyReplica runs the cache on every replica. The manager would otherwise
// start it on the leader only: a cache with both DefaultNamespaces and
// ByObject does not say it needs no leader election, so a follower would
// never get its certificate files and its server would never start.
type everyReplica struct{ cache.Cache }

var _ manager.LeaderElectionRunnable = everyReplica{}

func (everyReplica) NeedLeaderElection() bool { return false }

// writeCertFiles writes each certificate file whose content differs, each
// through a temporary file renamed into place so that no reader sees half a
// file. Missing data writes nothing: the rotator has not made it yet.
func writeCertFiles(dir string, data map[string][]byte) error {
	for _, name := range certFiles {
		if len(data[name]) == 0 {
			return nil
		}
	}
	for _, name := range certFiles {
		path := filepath.Join(dir, name)
		if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data[name]) {
			continue
		}
		tmp, err := os.CreateTemp(dir, "."+name+"-")
		if err != nil {
			return err
		}
		_, werr := tmp.Write(data[name])
		cerr := tmp.Close()
		if werr != nil || cerr != nil {
			os.Remove(tmp.Name())
			return fmt.Errorf("writing %s: %w", path, errors.Join(werr, cerr))
		}
		if err := os.Chmod(tmp.Name(), 0o600); err != nil {
			os.Remove(tmp.Name())
			return err
		}
		if err := os.Rename(tmp.Name(), path); err != nil {
			os.Remove(tmp.Name())
			return err
		}
	}
	return nil
}
