package cluster

import (
	"context"
	"crypto/tls"
	_ "embed"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

//go:embed kwok-stages.yaml
var kwokStages []byte

const (
	serviceCIDR = "10.0.0.0/24"
	serviceIP   = "10.0.0.1"

	// FakeNodeAnnotation marks the nodes kwok manages.
	FakeNodeAnnotation = "kwok.x-k8s.io/node"

	// PodRunTimeAnnotation on a pod (template) sets how long the pod runs
	// before it succeeds, as a Go duration ("30s", "1500ms"). kwok reads
	// nothing else: a bare number ("1500") leaves the pod its default run
	// time (Options.PodRunTime).
	PodRunTimeAnnotation = "pod-complete.stage.kwok.x-k8s.io/delay"
)

// Options shape a local cluster. The zero value is usable.
type Options struct {
	// Dir holds certificates, etcd's data, the kubeconfig and logs; by
	// default a new temporary directory that Stop removes.
	Dir string
	// Nodes is how many kwok nodes to create (default 2).
	Nodes int
	// NodeCPU and NodeMemory are each node's allocatable (default 32 and 256Gi).
	NodeCPU, NodeMemory string
	// NodeLabels, when set, gives node i (kwok-node-<i>) labels besides
	// its own: a topology's block and rack, say.
	NodeLabels func(i int) map[string]string
	// StartTimeout bounds how long the control plane may take to come up
	// (default 2 minutes).
	StartTimeout time.Duration
	// PodRunTime is how long a pod of a Job, TFJob, PyTorchJob, MPIJob or
	// Argo Workflow runs before it succeeds when it has no
	// PodRunTimeAnnotation (default 1s). Other pods run until deleted.
	PodRunTime time.Duration
	// AuditWrites has the API server log every write to AuditLog, for
	// WritesBy to count who wrote what.
	AuditWrites bool
	// ComponentQPS, when set, is kube-controller-manager's and
	// kube-scheduler's client QPS (burst twice that) instead of their
	// defaults (20 and 50): a performance run that creates Jobs by the
	// thousand is otherwise paced by the Job controller's client.
	ComponentQPS int
}

// Cluster is a running local cluster.
type Cluster struct {
	// Dir is the cluster's directory; Kubeconfig an admin kubeconfig in it.
	Dir, Kubeconfig string
	// Config is the admin REST config.
	Config *rest.Config

	logDir  string
	ownsDir bool
	procs   []*Process
	opts    Options
	pki     *pki
}

// Start brings up etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler and kwok, creates the fake nodes and waits until the cluster
// can run pods. On error everything started is stopped again.
func Start(ctx context.Context, opts Options) (c *Cluster, err error) {
	if opts.Nodes == 0 {
		opts.Nodes = 2
	}
	if opts.NodeCPU == "" {
		opts.NodeCPU = "32"
	}
	if opts.NodeMemory == "" {
		opts.NodeMemory = "256Gi"
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 2 * time.Minute
	}
	if opts.PodRunTime == 0 {
		opts.PodRunTime = time.Second
	}
	c = &Cluster{Dir: opts.Dir, opts: opts}
	if c.Dir == "" {
		if c.Dir, err = os.MkdirTemp("", "koord-queue-cluster-"); err != nil {
			return nil, fmt.Errorf("creating cluster directory: %w", err)
		}
		c.ownsDir = true
	}
	c.logDir = filepath.Join(c.Dir, "logs")
	if err := os.MkdirAll(c.logDir, 0o755); err != nil {
		return nil, fmt.Errorf("creating log directory: %w", err)
	}
	defer func() {
		if err != nil {
			c.stopProcesses()
			err = fmt.Errorf("%w (logs in %s)", err, c.logDir)
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	for _, step := range []func(context.Context) error{
		c.startEtcdAndAPIServer,
		c.startControllerManager,
		c.startScheduler,
		c.startKwok,
		c.createNodes,
		c.waitForServiceAccount,
	} {
		if err := step(ctx); err != nil {
			return c, err
		}
	}
	return c, nil
}

// LogDir holds one log file per process.
func (c *Cluster) LogDir() string { return c.logDir }

// Stop stops every process, kwok first and etcd last. It removes the
// cluster's directory only if Start created it and keepLogs is false.
func (c *Cluster) Stop(keepLogs bool) {
	c.stopProcesses()
	if c.ownsDir && !keepLogs {
		_ = os.RemoveAll(c.Dir)
	}
}

func (c *Cluster) stopProcesses() {
	for _, p := range slices.Backward(c.procs) {
		p.Stop(10 * time.Second)
	}
	c.procs = nil
}

func (c *Cluster) start(name string, args ...string) error {
	bin, err := Tool(name)
	if err != nil {
		return err
	}
	_, err = c.StartProcess(name, bin, args...)
	return err
}

// StartProcess runs another binary against the cluster (koord-queue, say),
// logging beside the cluster's own processes; Stop stops it first. Its name
// must be unique among the cluster's processes (it names the log file).
func (c *Cluster) StartProcess(name, binary string, args ...string) (*Process, error) {
	return c.StartProcessEnv(name, nil, binary, args...)
}

// StartProcessEnv is StartProcess with env ("KEY=value") added to the
// process's environment.
func (c *Cluster) StartProcessEnv(name string, env []string, binary string, args ...string) (*Process, error) {
	p, err := RunProcessEnv(filepath.Join(c.logDir, name+".log"), env, binary, args...)
	if err != nil {
		return nil, err
	}
	c.procs = append(c.procs, p)
	return p, nil
}

// checkRunning fails fast when a process has died instead of waiting for a timeout.
func (c *Cluster) checkRunning() error {
	for _, p := range c.procs {
		if err := p.Err(); err != nil {
			return err
		}
	}
	return nil
}

func (c *Cluster) startEtcdAndAPIServer(ctx context.Context) error {
	ports, err := FreePorts(3)
	if err != nil {
		return err
	}
	etcdClient, etcdPeer, apiPort := Loopback(ports[0]), Loopback(ports[1]), ports[2]
	if err := c.start("etcd",
		"--name=default",
		"--data-dir="+filepath.Join(c.Dir, "etcd"),
		"--listen-client-urls=http://"+etcdClient,
		"--advertise-client-urls=http://"+etcdClient,
		"--listen-peer-urls=http://"+etcdPeer,
		"--initial-advertise-peer-urls=http://"+etcdPeer,
		"--initial-cluster=default=http://"+etcdPeer,
		"--unsafe-no-fsync=true",
		"--log-level=warn",
	); err != nil {
		return err
	}
	pkiDir := filepath.Join(c.Dir, "pki")
	if err := os.MkdirAll(pkiDir, 0o700); err != nil {
		return fmt.Errorf("creating pki directory: %w", err)
	}
	p, err := writePKI(pkiDir)
	if err != nil {
		return err
	}
	c.pki = p
	audit, err := c.auditFlags(pkiDir)
	if err != nil {
		return err
	}
	if err := c.start("kube-apiserver", append([]string{
		"--etcd-servers=http://" + etcdClient,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(apiPort),
		"--tls-cert-file=" + p.ServingCert,
		"--tls-private-key-file=" + p.ServingKey,
		"--client-ca-file=" + p.CACert,
		"--authorization-mode=RBAC",
		"--service-account-key-file=" + p.SAPub,
		"--service-account-signing-key-file=" + p.SAKey,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-cluster-ip-range=" + serviceCIDR,
		"--allow-privileged=true",
		"--enable-priority-and-fairness=false",
		"--storage-media-type=application/json",
		// The aggregation layer, as a kubeadm cluster has it, so aggregated
		// APIs can be served by local processes. With aggregator routing the
		// API server resolves a Service to its endpoints itself (webhooks
		// too), so an EndpointSlice pointing at 127.0.0.1 reaches a local
		// process through the chart's Service.
		"--enable-aggregator-routing=true",
		"--requestheader-client-ca-file=" + p.FrontProxyCACert,
		"--requestheader-allowed-names=" + frontProxyClientName,
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + p.ProxyClientCert,
		"--proxy-client-key-file=" + p.ProxyClientKey,
		"--v=1",
	}, audit...)...); err != nil {
		return err
	}
	c.Kubeconfig = filepath.Join(c.Dir, "kubeconfig")
	if err := writeKubeconfig(c.Kubeconfig, "https://"+Loopback(apiPort), p); err != nil {
		return err
	}
	c.Config, err = clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return fmt.Errorf("loading %s: %w", c.Kubeconfig, err)
	}
	c.Config.QPS, c.Config.Burst = 100, 200
	client, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return fmt.Errorf("building client: %w", err)
	}
	return c.waitFor(ctx, "kube-apiserver /readyz", func(ctx context.Context) error {
		body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil {
			return fmt.Errorf("%w: %s", err, body)
		}
		return nil
	})
}

func (c *Cluster) startControllerManager(ctx context.Context) error {
	return c.startSecureComponent(ctx, "kube-controller-manager", append([]string{
		"--service-account-private-key-file=" + c.pki.SAKey,
		"--root-ca-file=" + c.pki.CACert,
		"--use-service-account-credentials=false",
		"--controllers=*,-nodeipam,-cloud-node-lifecycle,-service-lb-controller,-route",
		"--concurrent-job-syncs=10",
	}, c.qpsFlags()...)...)
}

func (c *Cluster) startScheduler(ctx context.Context) error {
	return c.startSecureComponent(ctx, "kube-scheduler", c.qpsFlags()...)
}

// qpsFlags set a component's client QPS and burst (Options.ComponentQPS).
func (c *Cluster) qpsFlags() []string {
	if c.opts.ComponentQPS == 0 {
		return nil
	}
	return []string{"--kube-api-qps=" + strconv.Itoa(c.opts.ComponentQPS), "--kube-api-burst=" + strconv.Itoa(2*c.opts.ComponentQPS)}
}

// startSecureComponent starts kube-controller-manager or kube-scheduler with
// the flags both take and args, serving on a free loopback port, and waits
// for its /healthz.
func (c *Cluster) startSecureComponent(ctx context.Context, name string, args ...string) error {
	ports, err := FreePorts(1)
	if err != nil {
		return err
	}
	if err := c.start(name, append([]string{
		"--kubeconfig=" + c.Kubeconfig,
		"--authentication-kubeconfig=" + c.Kubeconfig,
		"--authorization-kubeconfig=" + c.Kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(ports[0]),
		"--leader-elect=false",
		"--v=1",
	}, args...)...); err != nil {
		return err
	}
	return c.waitForHealthz(ctx, name, ports[0])
}

func (c *Cluster) startKwok(context.Context) error {
	stages := filepath.Join(c.Dir, "kwok-stages.yaml")
	if err := os.WriteFile(stages, stagesWithPodRunTime(c.opts.PodRunTime), 0o644); err != nil {
		return fmt.Errorf("writing kwok stages: %w", err)
	}
	ports, err := FreePorts(1)
	if err != nil {
		return err
	}
	port := ports[0]
	return c.start("kwok",
		"--kubeconfig="+c.Kubeconfig,
		"--config="+stages,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector="+FakeNodeAnnotation+"=fake",
		"--node-lease-duration-seconds=40",
		"--cidr=10.244.0.1/16",
		"--node-ip=10.0.1.1",
		"--server-address="+Loopback(port),
	)
}

// stagesWithPodRunTime sets the pod-complete stage's default delay.
func stagesWithPodRunTime(d time.Duration) []byte {
	docs := strings.Split(string(kwokStages), "\n---\n")
	for i, doc := range docs {
		if strings.Contains(doc, "name: pod-complete\n") {
			docs[i] = strings.Replace(doc, "durationMilliseconds: 1000", fmt.Sprintf("durationMilliseconds: %d", d.Milliseconds()), 1)
		}
	}
	return []byte(strings.Join(docs, "\n---\n"))
}

// InstallCRDs installs the CRDs in paths (files or directories) and waits
// until they are served.
func (c *Cluster) InstallCRDs(paths ...string) error {
	_, err := envtest.InstallCRDs(c.Config, envtest.CRDInstallOptions{Paths: paths, ErrorIfPathMissing: true})
	if err != nil {
		return fmt.Errorf("installing CRDs: %w", err)
	}
	return nil
}

// createNodes creates the fake nodes and waits for kwok to make them Ready.
func (c *Cluster) createNodes(ctx context.Context) error {
	client, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return fmt.Errorf("building client: %w", err)
	}
	// Ephemeral storage, as a real node reports it: some operators' pods
	// ask for it (the MPIJob launcher's init container does).
	allocatable := corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse(c.opts.NodeCPU),
		corev1.ResourceMemory:           resource.MustParse(c.opts.NodeMemory),
		corev1.ResourceEphemeralStorage: resource.MustParse("1Ti"),
		corev1.ResourcePods:             resource.MustParse("110"),
	}
	for i := range c.opts.Nodes {
		name := fmt.Sprintf("kwok-node-%d", i)
		var labels map[string]string
		if c.opts.NodeLabels != nil {
			labels = c.opts.NodeLabels(i)
		}
		node := FakeNode(name, labels, allocatable)
		if _, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating node %s: %w", name, err)
		}
	}
	return c.waitFor(ctx, "kwok nodes Ready", func(ctx context.Context) error {
		nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		ready := 0
		for _, n := range nodes.Items {
			for _, cond := range n.Status.Conditions {
				if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		if ready < c.opts.Nodes {
			return fmt.Errorf("%d of %d nodes Ready: %w", ready, c.opts.Nodes, errNotReady)
		}
		return nil
	})
}

// FakeNode is a node kwok manages (and makes Ready once created) with
// allocatable (and the same capacity), labelled as a kwok node and with
// labels.
func FakeNode(name string, labels map[string]string, allocatable corev1.ResourceList) *corev1.Node {
	all := map[string]string{"type": "kwok", corev1.LabelHostname: name, corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64"}
	maps.Copy(all, labels)
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{FakeNodeAnnotation: "fake"},
			Labels:      all,
		},
		Status: corev1.NodeStatus{Allocatable: allocatable.DeepCopy(), Capacity: allocatable.DeepCopy()},
	}
}

// waitForServiceAccount waits for the default service account, which pods
// need and kube-controller-manager creates: then the cluster can run Jobs.
func (c *Cluster) waitForServiceAccount(ctx context.Context) error {
	client, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return fmt.Errorf("building client: %w", err)
	}
	return c.waitFor(ctx, "default service account", func(ctx context.Context) error {
		_, err := client.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		return err
	})
}

func (c *Cluster) waitForHealthz(ctx context.Context, name string, port int) error {
	// The components serve with a self-signed certificate; this is a liveness probe on loopback.
	httpClient := &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec
	}
	return waitForHTTP(ctx, name+" /healthz", httpClient, "https://"+Loopback(port)+"/healthz", c.checkRunning)
}

// waitForHTTP waits until url answers 200 OK, while alive does not fail.
func waitForHTTP(ctx context.Context, what string, httpClient *http.Client, url string, alive func() error) error {
	return waitFor(ctx, what, alive, func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := httpClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d: %w", resp.StatusCode, errNotReady)
		}
		return nil
	})
}

var errNotReady = errors.New("not ready")

// waitFor polls check until it succeeds, a process of the cluster dies, or
// ctx ends; the error names what was awaited and the last reason it was not
// there yet.
func (c *Cluster) waitFor(ctx context.Context, what string, check func(context.Context) error) error {
	return waitFor(ctx, what, c.checkRunning, check)
}

// waitFor polls check until it succeeds, alive fails, or ctx ends.
func waitFor(ctx context.Context, what string, alive func() error, check func(context.Context) error) error {
	var last error
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if err := alive(); err != nil {
			return false, err
		}
		last = check(ctx)
		return last == nil, nil
	})
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return fmt.Errorf("waiting for %s: %w (last: %v)", what, err, last)
		}
		return fmt.Errorf("waiting for %s: %w", what, err)
	}
	return nil
}

func writeKubeconfig(path, server string, p *pki) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: server, CertificateAuthority: p.CACert}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificate: p.AdminCert, ClientKey: p.AdminKey}
	cfg.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "admin"}
	cfg.CurrentContext = "local"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	return nil
}

// Logs returns the last lines of every process's log, for a failed test.
func (c *Cluster) Logs(lines int) string {
	var b strings.Builder
	entries, _ := os.ReadDir(c.logDir)
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(c.logDir, e.Name()))
		if err != nil {
			continue
		}
		all := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		fmt.Fprintf(&b, "==> %s <==\n%s\n", e.Name(), strings.Join(all[max(0, len(all)-lines):], "\n"))
	}
	return b.String()
}
