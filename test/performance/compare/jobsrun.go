package compare

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/koord-queue/koord-queue/test/cluster"
	"github.com/koord-queue/koord-queue/test/performance/controller"
	"github.com/koord-queue/koord-queue/test/performance/generator"
	"github.com/koord-queue/koord-queue/test/performance/kube"
	"github.com/koord-queue/koord-queue/test/testenv"
)

// JobsRun is one run of one system on the shape's Jobs (make
// perf-compare-jobs): a fresh local cluster (etcd, kube-apiserver logging
// every write, kube-controller-manager, kube-scheduler, kwok nodes), the
// system's CRDs, its binaries as users run them, its queues, then every
// Job created on Kueue's generator's schedule, until every Job completes.
type JobsRun struct {
	// System is Kueue or KoordQueue.
	System string
	Shape  Shape
	// Dir receives the cluster's logs and the run's measurement.
	Dir string
	// QueueBinary and ExtensionsBinary are koord-queue's (cmd/queue,
	// cmd/extensions).
	QueueBinary, ExtensionsBinary string
	// KueueManager is Kueue's manager (cmd/kueue, hack/ensure-tools.sh
	// kueue); KueueCRDs its CRDs (config/components/crd/bases in its
	// module).
	KueueManager, KueueCRDs string
	// Timeout bounds the run.
	Timeout time.Duration
	// CutOff keeps a run whose Timeout passed before every Job completed:
	// it stops there and its measurement holds what it had reached
	// (Measurement.CutOff), instead of failing it.
	CutOff bool
	// KeepAudit keeps the audit log once counted.
	KeepAudit bool
	// Profiles serves koord-queue's and koord-queue-controllers' Go
	// /debug/pprof and writes into Dir their CPU profiles while the Jobs
	// run and their heap profiles once every Job completed (when the
	// caches hold every Job, unit and pod): what the CPU and RSS of the
	// table are spent on. The profiling's own CPU is in the measurement.
	// Kueue's manager is not profiled.
	Profiles bool
	Progress io.Writer
}

// componentQPS is kube-controller-manager's and kube-scheduler's client
// QPS: at their defaults (20 and 50) the Job controller, which writes
// about eight times per Job, would pace both systems at two or three Jobs
// a second, and hide what the queueing systems do.
const componentQPS = 1000

// cutOffGrace is how long a run cut off (JobsRun.CutOff) has, past its
// Timeout, to stop its system and list its events.
const cutOffGrace = 5 * time.Minute

// kueueNamespace is the manager's namespace (its Configuration's).
const kueueNamespace = "kueue-system"

// system is a running queueing system: its processes, and their
// profilers with JobsRun.Profiles.
type system struct {
	names     []string
	procs     []*controller.Process
	profilers []*controller.Profiler
}

func (s *system) done() <-chan error {
	ch := make(chan error, len(s.procs))
	for _, p := range s.procs {
		go func() {
			<-p.Done()
			ch <- p.Err()
		}()
	}
	return ch
}

// stop stops the processes and returns what each used.
func (s *system) stop() []Component {
	var out []Component
	for i, p := range s.procs {
		st := p.Stop()
		out = append(out, Component{
			Name: s.names[i], CPUSeconds: st.CPUSeconds, PeakRSSMiB: float64(st.PeakRSSKiB) / 1024,
			AnonMiB: float64(st.Resident.AnonKiB) / 1024, FileMiB: float64(st.Resident.FileKiB) / 1024,
		})
	}
	s.procs = nil
	return out
}

func (r *JobsRun) progress(format string, args ...any) {
	if r.Progress != nil {
		fmt.Fprintf(r.Progress, format, args...)
	}
}

// Run runs the system on the shape and returns what it measured; a run that
// did not complete is a Measurement with Error set.
func (r *JobsRun) Run(ctx context.Context) (Measurement, error) {
	m := Measurement{System: r.System, Dir: r.Dir, Writes: -1, LoadBefore: LoadAverage()}
	clusterDir, err := filepath.Abs(filepath.Join(r.Dir, "cluster"))
	if err != nil {
		return m, fmt.Errorf("finding the cluster's directory: %w", err)
	}
	_ = os.RemoveAll(clusterDir)
	if err := os.MkdirAll(clusterDir, 0o755); err != nil {
		return m, fmt.Errorf("creating %s: %w", clusterDir, err)
	}
	if r.System == Kueue {
		// Deferred, so that a failed or interrupted run removes them too.
		removeCerts, err := writeFixedCerts(kueueFixedCertDirs)
		if err != nil {
			return m, err
		}
		defer removeCerts()
	}
	cutOff := time.Now().Add(r.Timeout)
	runCtx, cancel := context.WithDeadline(ctx, cutOff.Add(cutOffGrace))
	defer cancel()
	nodes, nodeCPU := r.Shape.Nodes()
	servers := FollowServers(ctx, os.Getpid(), time.Second)
	others := FollowProcesses(ctx, os.Getpid(), ClusterAgents, time.Second)
	c, err := cluster.Start(runCtx, cluster.Options{
		Dir: clusterDir, Nodes: nodes, NodeCPU: strconv.FormatInt(nodeCPU, 10), AuditWrites: true, ComponentQPS: componentQPS,
	})
	if err != nil {
		servers.Stop()
		others.Stop()
		return m, fmt.Errorf("starting the local cluster: %w", err)
	}
	stopCluster := func() {
		m.ServerCPUSeconds, m.NodeCPUSeconds = servers.Stop(), others.Stop()
		c.Stop(true) // keeps the logs; etcd's data is not worth keeping
		_ = os.RemoveAll(filepath.Join(clusterDir, "etcd"))
	}
	runErr := r.run(runCtx, c, &m, cutOff)
	stopCluster()
	m.LoadAfter = LoadAverage()
	if ctx.Err() != nil {
		return m, ctx.Err()
	}
	if runErr != nil {
		m.Error = fmt.Sprintf("%v (logs in %s)", runErr, c.LogDir())
		return m, nil
	}
	byAgent, err := WritesByAgent(c.AuditLog())
	if err != nil {
		return m, err
	}
	m.WritesByAgent = byAgent
	m.Writes = m.AgentWrites(SystemAgents[r.System]...)
	if !r.KeepAudit {
		if err := cluster.RemoveAuditLogs(c.AuditLog()); err != nil {
			return m, err
		}
	}
	return m, nil
}

// run does the run's work on the started cluster, filling m, until every
// Job completed or the cut-off (the run's Timeout) passed.
func (r *JobsRun) run(ctx context.Context, c *cluster.Cluster, m *Measurement, cutOff time.Time) error {
	// The Job creators and informers stop when run returns, not when the
	// cluster has been stopped under them.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	gen, err := kube.Client(c.Config, "perf-generator")
	if err != nil {
		return err
	}
	crds := testenv.CRDDir()
	if r.System == Kueue {
		crds = r.KueueCRDs
	}
	if err := c.InstallCRDs(crds); err != nil {
		return err
	}
	sc := r.Shape.QuotaScenario("jobs")
	if err := generator.CreateNamespaces(ctx, gen, &sc); err != nil {
		return err
	}
	if err := createAll(ctx, gen, priorityObjects(r.Shape)); err != nil {
		return err
	}

	sys, err := r.startSystem(ctx, c, gen)
	if sys != nil {
		defer func() {
			if sys.procs != nil {
				sys.stop()
			}
		}()
	}
	if err != nil {
		return err
	}

	want := r.Shape.Jobs()
	rec := newJobRecord(want)
	clientset, err := kubernetes.NewForConfig(kube.ConfigFor(c.Config, "perf-jobs", kube.HarnessQPS, kube.HarnessBurst))
	if err != nil {
		return fmt.Errorf("building the Job and pod client: %w", err)
	}
	factory := informers.NewSharedInformerFactory(clientset, 0)
	jobs, pods := factory.Batch().V1().Jobs().Informer(), factory.Core().V1().Pods().Informer()
	for _, h := range []struct {
		inf     toolscache.SharedIndexInformer
		observe func(any, time.Time)
	}{{jobs, rec.observeJob}, {pods, rec.observePod}} {
		if _, err := h.inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { h.observe(obj, time.Now()) },
			UpdateFunc: func(_, obj any) { h.observe(obj, time.Now()) },
		}); err != nil {
			return fmt.Errorf("watching Jobs and pods: %w", err)
		}
	}
	factory.Start(ctx.Done())
	defer func() {
		cancel()
		factory.Shutdown() // waits for the informers, which cancel stops
	}()
	if !toolscache.WaitForCacheSync(ctx.Done(), jobs.HasSynced, pods.HasSynced) {
		return fmt.Errorf("the Job and pod informers did not sync: %w", ctx.Err())
	}

	nodes, nodeCPU := r.Shape.Nodes()
	r.progress("  %s: creating %d Jobs in %d queues (%d kwok nodes of %d cpu)\n", r.System, want, len(r.Shape.Leaves()), nodes, nodeCPU)
	start := time.Now()
	created := make(chan error, 1)
	go func() { created <- r.createJobs(ctx, gen, rec, start) }()
	exited := sys.done()
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	timeUp := time.NewTimer(time.Until(cutOff))
	defer timeUp.Stop()
	end := time.Time{}
	for end.IsZero() {
		select {
		case err := <-created:
			if err != nil {
				return err
			}
		case <-rec.all:
			end = rec.lastComplete()
		case err := <-exited:
			return fmt.Errorf("a component exited: %w", err)
		case <-tick.C:
			nc, nr, nd, ne := rec.counts()
			r.progress("  %s %4.0fs: %d created, %d started, %d complete, %d evictions\n", r.System, time.Since(start).Seconds(), nc, nr, nd, ne)
		case now := <-timeUp.C:
			nc, nr, nd, _ := rec.counts()
			if !r.CutOff {
				return fmt.Errorf("%d of %d Jobs complete (%d created, %d started) when the run's time (%v) was up", nd, want, nc, nr, r.Timeout)
			}
			r.progress("  %s: cut off after %v: %d of %d Jobs complete (%d created, %d started)\n", r.System, r.Timeout, nd, want, nc, nr)
			end, m.CutOff = now, true
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	m.WallSeconds = end.Sub(start).Seconds()
	for _, p := range sys.profilers {
		if err := p.Stop(ctx); err != nil {
			return err
		}
	}
	m.Components = sys.stop()
	for _, comp := range m.Components {
		m.CPUSeconds += comp.CPUSeconds
		m.PeakRSSMiB += comp.PeakRSSMiB
	}
	if m.WallSeconds > 0 {
		m.Cores = m.CPUSeconds / m.WallSeconds
	}
	_, _, m.Jobs, m.Evictions = rec.counts()
	m.JobsInShape = want
	m.ToRunning = rec.toRunning(end, m.CutOff)
	var events corev1.EventList
	if err := gen.List(ctx, &events); err != nil {
		return fmt.Errorf("listing the events: %w", err)
	}
	m.Events = EventsOf(events.Items)
	return nil
}

// createJobs creates each leaf's Jobs as Kueue's runner creates its
// workloads: one creator per leaf and set, Job i at start + (i+1) ×
// interval (generator.Arrival).
func (r *JobsRun) createJobs(ctx context.Context, c client.Client, rec *jobRecord, start time.Time) error {
	g, ctx := errgroup.WithContext(ctx)
	sc := r.Shape.QuotaScenario("jobs")
	for _, leaf := range r.Shape.Leaves() {
		for si, set := range r.Shape.Sets {
			g.Go(func() error {
				for i := range set.Count {
					at := start.Add(generator.Arrival(sc.Sets[si], i))
					select {
					case <-ctx.Done():
						return ctx.Err()
					case <-time.After(time.Until(at)):
					}
					j := Job(r.System, leaf, set, i)
					rec.creating(j, time.Now())
					if err := c.Create(ctx, j); err != nil {
						return fmt.Errorf("creating Job %s/%s: %w", j.Namespace, j.Name, err)
					}
				}
				return nil
			})
		}
	}
	return g.Wait()
}

// startSystem starts the system's binaries and creates its queues.
func (r *JobsRun) startSystem(ctx context.Context, c *cluster.Cluster, gen client.Client) (*system, error) {
	if r.System == Kueue {
		return r.startKueue(ctx, c, gen)
	}
	sys := &system{}
	ports, err := cluster.FreePorts(5)
	if err != nil {
		return nil, err
	}
	var queueArgs, extArgs []string
	queuePprof, extPprof := cluster.Loopback(ports[3]), cluster.Loopback(ports[4])
	if r.Profiles {
		queueArgs = []string{"--pprof-bind-address=" + queuePprof}
		extArgs = []string{"--pprof-bind-address=" + extPprof}
	}
	queue, err := controller.Start(ctx, r.QueueBinary, c.Kubeconfig, 50, 100, filepath.Join(c.LogDir(), "koord-queue.log"), queueArgs...)
	if err != nil {
		return nil, err
	}
	sys.names, sys.procs = append(sys.names, "koord-queue"), append(sys.procs, queue)
	metricsAddr, probeAddr := cluster.Loopback(ports[0]), cluster.Loopback(ports[1])
	// The extensions at their defaults (QPS, burst, extensions enabled);
	// only the addresses are the harness's, and no leader election.
	ext, err := controller.StartBinary(ctx, r.ExtensionsBinary, filepath.Join(c.LogDir(), "koord-queue-controllers.log"), metricsAddr, probeAddr,
		append([]string{
			"--kubeconfig=" + c.Kubeconfig,
			"--leader-elect=false",
			"--metrics-bind-address=" + metricsAddr,
			"--metrics-secure=false",
			"--health-probe-bind-address=" + probeAddr,
			"--webhook-port=" + strconv.Itoa(ports[2]),
		}, extArgs...)...,
	)
	if err != nil {
		return sys, err
	}
	sys.names, sys.procs = append(sys.names, "koord-queue-controllers"), append(sys.procs, ext)
	if r.Profiles {
		sys.profilers = []*controller.Profiler{
			controller.StartProfiles(ctx, "koord-queue", queuePprof, r.Dir),
			controller.StartProfiles(ctx, "koord-queue-controllers", extPprof, r.Dir),
		}
	}
	sc := r.Shape.QuotaScenario("jobs")
	return sys, generator.CreateQuotas(ctx, gen, &sc)
}

// startKueue starts Kueue's manager with its Configuration (KueueManagerConfig),
// a self-signed pair for its webhook server (which must start though no
// webhook configuration calls it: the Jobs are created suspended, with
// their queue's label; Run has written its metrics and visibility
// servers' pairs where its code reads them), then creates the
// ResourceFlavor, ClusterQueues and LocalQueues and waits until every
// ClusterQueue is active.
func (r *JobsRun) startKueue(ctx context.Context, c *cluster.Cluster, gen client.Client) (*system, error) {
	if err := gen.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: kueueNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating namespace %s: %w", kueueNamespace, err)
	}
	certDir := filepath.Join(r.Dir, "kueue-certs")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating %s: %w", certDir, err)
	}
	if _, err := cluster.WriteServingCert(certDir); err != nil {
		return nil, err
	}
	ports, err := cluster.FreePorts(4)
	if err != nil {
		return nil, err
	}
	metricsAddr, probeAddr := cluster.Loopback(ports[0]), cluster.Loopback(ports[1])
	absCertDir, err := filepath.Abs(certDir)
	if err != nil {
		return nil, err
	}
	cfgPath := filepath.Join(r.Dir, "kueue-config.yaml")
	if err := os.WriteFile(cfgPath, KueueManagerConfig(kueueNamespace, ports[2], absCertDir, probeAddr, metricsAddr), 0o644); err != nil {
		return nil, fmt.Errorf("writing Kueue's configuration: %w", err)
	}
	mgr, err := controller.StartBinary(ctx, r.KueueManager, filepath.Join(c.LogDir(), "kueue-manager.log"), metricsAddr, probeAddr,
		"--config="+cfgPath,
		"--kubeconfig="+c.Kubeconfig,
		"--visibility-server-port="+strconv.Itoa(ports[3]),
	)
	if err != nil {
		return nil, err
	}
	sys := &system{names: []string{"kueue-manager"}, procs: []*controller.Process{mgr}}
	objs := r.Shape.KueueObjects()
	cobjs := make([]client.Object, len(objs))
	for i, o := range objs {
		cobjs[i] = o
	}
	if err := createAll(ctx, gen, cobjs); err != nil {
		return sys, err
	}
	return sys, waitClusterQueuesActive(ctx, gen, r.Shape.Leaves())
}

// kueueFixedCertDirs are where Kueue's manager (v0.17.0) reads the pairs
// of its metrics server and its visibility API server when internal
// certificate management is off: paths its code fixes, where its
// release's Deployment mounts Secrets.
var kueueFixedCertDirs = []string{"/etc/kueue/metrics/certs", "/visibility"}

// CheckKueueFixedCerts says, before any run, why Kueue's manager could not
// be given its pairs (kueueFixedCertDirs): a directory without one is made
// for the run, which takes root.
func CheckKueueFixedCerts() error { return checkFixedCerts(kueueFixedCertDirs, os.Geteuid()) }

func checkFixedCerts(dirs []string, euid int) error {
	var missing []string
	for _, dir := range dirs {
		if _, err := os.Stat(filepath.Join(dir, "tls.key")); err != nil {
			missing = append(missing, dir)
		}
	}
	if len(missing) == 0 || euid == 0 {
		return nil
	}
	return fmt.Errorf("no certificate in %s, where Kueue's manager reads them (paths fixed in its code): the harness writes them for each run and removes them after, which takes root; run as root, or with -only koord-queue", strings.Join(missing, " and "))
}

// writeFixedCerts writes a self-signed pair into each of dirs that has
// none, and returns what removes what it wrote: the directories it made,
// and the pair in a directory that was there.
func writeFixedCerts(dirs []string) (cleanup func(), err error) {
	var written []string
	cleanup = func() {
		for _, path := range slices.Backward(written) {
			_ = os.RemoveAll(path)
		}
	}
	for _, dir := range dirs {
		if _, err := os.Stat(filepath.Join(dir, "tls.key")); err == nil {
			continue
		}
		if top := firstMissing(dir); top != "" {
			written = append(written, top)
		} else {
			written = append(written, filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			cleanup()
			return nil, fmt.Errorf("making %s, where Kueue's manager reads a certificate (fixed in its code): %w", dir, err)
		}
		if _, err := cluster.WriteServingCert(dir); err != nil {
			cleanup()
			return nil, err
		}
	}
	return cleanup, nil
}

// firstMissing is the topmost directory os.MkdirAll(dir) would make; ""
// if dir exists.
func firstMissing(dir string) string {
	missing := ""
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil {
			return missing
		}
		missing = d
		if filepath.Dir(d) == d {
			return missing
		}
	}
}

// waitClusterQueuesActive waits until each ClusterQueue has its Active
// condition true: Kueue admits into it from then on.
func waitClusterQueuesActive(ctx context.Context, c client.Client, names []string) error {
	var inactive []string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion(kueueAPIVersion)
		list.SetKind("ClusterQueueList")
		if err := c.List(ctx, list); err != nil {
			return false, err
		}
		active := map[string]bool{}
		for _, cq := range list.Items {
			conds, _, _ := unstructured.NestedSlice(cq.Object, "status", "conditions")
			for _, cond := range conds {
				cm, _ := cond.(map[string]any)
				if cm["type"] == "Active" && cm["status"] == "True" {
					active[cq.GetName()] = true
				}
			}
		}
		inactive = inactive[:0]
		for _, n := range names {
			if !active[n] {
				inactive = append(inactive, n)
			}
		}
		return len(inactive) == 0, nil
	})
	if err != nil {
		sort.Strings(inactive)
		return fmt.Errorf("waiting for Kueue's ClusterQueues to be active (%d of %d not, first %v): %w", len(inactive), len(names), inactive[:min(len(inactive), 5)], err)
	}
	return nil
}

func priorityObjects(s Shape) []client.Object {
	var out []client.Object
	for _, pc := range s.PriorityClasses() {
		out = append(out, pc)
	}
	return out
}

// createAll creates objs in order.
func createAll(ctx context.Context, c client.Client, objs []client.Object) error {
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil {
			return fmt.Errorf("creating %s: %w", o.GetName(), err)
		}
	}
	return nil
}
