// Package testenv starts one real kube-apiserver and etcd for a test package
// (controller-runtime's envtest, pointed at the pinned binaries that
// hack/ensure-tools.sh builds) with koord-queue's CRDs installed. Start it
// once in TestMain, not once per test: these machines have two cores.
package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/koord-queue/koord-queue/apis"
	"github.com/koord-queue/koord-queue/test/cluster"
)

// Env is a running API server and a client for it.
type Env struct {
	Config *rest.Config
	Client client.Client
	Scheme *k8sruntime.Scheme

	env *envtest.Environment
}

// CRDDir holds the generated CRDs of Queue, QueueUnit and ElasticQuota.
func CRDDir() string {
	return filepath.Join(cluster.RepoRoot(), "config", "crd", "bases")
}

// NewScheme knows the built-in types, CRDs and koord-queue's types.
func NewScheme() (*k8sruntime.Scheme, error) {
	s := k8sruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := apis.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}

// Start runs etcd and kube-apiserver with the CRDs in CRDDir and extraCRDDirs.
func Start(extraCRDDirs ...string) (*Env, error) {
	return StartWithCRDs(append([]string{CRDDir()}, extraCRDDirs...))
}

// StartWithCRDs runs etcd and kube-apiserver with only the CRDs in crdDirs
// (none: a bare API server, for tests that install CRDs themselves).
func StartWithCRDs(crdDirs []string) (*Env, error) {
	if _, err := cluster.Tool("kube-apiserver"); err != nil {
		return nil, err
	}
	s, err := NewScheme()
	if err != nil {
		return nil, fmt.Errorf("building scheme: %w", err)
	}
	e := &Env{Scheme: s, env: &envtest.Environment{
		BinaryAssetsDirectory: cluster.BinDir(),
		CRDDirectoryPaths:     crdDirs,
		ErrorIfCRDPathMissing: true,
		// envtest waits 10 s for the CRDs to be served: too short on two
		// cores busy with other builds and API servers.
		CRDInstallOptions: envtest.CRDInstallOptions{MaxTime: time.Minute},
		Scheme:            s,
	}}
	if e.Config, err = e.env.Start(); err != nil {
		// envtest leaves the API server running when installing CRDs fails.
		_ = e.env.Stop()
		return nil, fmt.Errorf("starting envtest: %w", err)
	}
	if e.Client, err = client.New(e.Config, client.Options{Scheme: s}); err != nil {
		_ = e.env.Stop()
		return nil, fmt.Errorf("building client: %w", err)
	}
	return e, nil
}

// WriteKubeconfig writes a kubeconfig of an administrator of the Env to
// path, for tools that take one (Helm, kubectl, a binary under test).
func (e *Env) WriteKubeconfig(path string) error {
	user, err := e.env.ControlPlane.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return fmt.Errorf("adding an admin user: %w", err)
	}
	data, err := user.KubeConfig()
	if err != nil {
		return fmt.Errorf("making a kubeconfig: %w", err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// Stop stops the API server and etcd.
func (e *Env) Stop() error {
	return e.env.Stop()
}

func init() {
	// Controllers log through controller-runtime; KOORD_QUEUE_TEST_LOG=1 shows it.
	if os.Getenv("KOORD_QUEUE_TEST_LOG") != "" {
		ctrllog.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.UseDevMode(true)))
	} else {
		ctrllog.SetLogger(logr.Discard())
	}
}

// Main is a TestMain body: it starts an Env with koord-queue's CRDs and
// extraCRDDirs', hands it to set, runs the package's tests and stops the
// Env. It returns the exit code.
func Main(m *testing.M, set func(*Env), extraCRDDirs ...string) int {
	return MainWithCRDs(m, set, append([]string{CRDDir()}, extraCRDDirs...))
}

// MainWithCRDs is Main with only the CRDs in crdDirs.
func MainWithCRDs(m *testing.M, set func(*Env), crdDirs []string) int {
	env, err := StartWithCRDs(crdDirs)
	if err != nil {
		fmt.Fprintf(os.Stderr, "testenv: %v\n", err)
		return 1
	}
	set(env)
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "testenv: stopping: %v\n", err)
	}
	return code
}

// StartManager runs a controller-runtime manager against the Env with the
// controllers setup adds, and returns a function that stops it and waits
// (once: calling it again does nothing).
// Metrics and health endpoints are off, and there is no leader election
// unless an option turns it on.
func (e *Env) StartManager(ctx context.Context, setup func(manager.Manager) error, opts ...func(*manager.Options)) (stop func(), err error) {
	options := manager.Options{
		Scheme:                 e.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	}
	for _, o := range opts {
		o(&options)
	}
	mgr, err := manager.New(e.Config, options)
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	if err := setup(mgr); err != nil {
		return nil, fmt.Errorf("setting up controllers: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		cancel()
		return nil, fmt.Errorf("manager cache did not sync: %w", <-done)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}, nil
}
