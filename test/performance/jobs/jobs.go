// Package jobs runs the scenarios of batch Jobs end to end on the local
// kwok cluster (test/cluster: etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler, kwok nodes), with both binaries
// as users run them: koord-queue (cmd/queue) at QPS 50 and the job
// extensions (cmd/extensions) at their defaults. The extensions queue the
// suspended Jobs as QueueUnits, koord-queue admits them, the extensions
// release the Jobs, pods run on kwok nodes and the Jobs complete. The
// checker watches the units; a Job informer sees completion.
//
// Scenario jobs (Run, scenario 5) creates one-pod Jobs at once; scenario
// topology (RunTopology) plays a stream of multi-pod Jobs on nodes in
// racks twice, without and with a rack asked, and measures how many ran
// within one rack.
package jobs

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/topology"
	"github.com/koord-queue/koord-queue/test/cluster"
	"github.com/koord-queue/koord-queue/test/performance/checker"
	"github.com/koord-queue/koord-queue/test/performance/controller"
	"github.com/koord-queue/koord-queue/test/performance/generator"
	"github.com/koord-queue/koord-queue/test/performance/harness"
	"github.com/koord-queue/koord-queue/test/performance/kube"
	"github.com/koord-queue/koord-queue/test/performance/scenario"
	"github.com/koord-queue/koord-queue/test/testenv"
)

// Name is the scenario's name on the command line.
const Name = "jobs"

// createWorkers create the Jobs in parallel.
const createWorkers = 8

// Options configure the run.
type Options struct {
	// Dir receives result.json, summary.txt, units.png and the cluster's logs.
	Dir string
	// QueueBinary is the koord-queue binary to measure.
	QueueBinary string
	// BinDir receives the extensions' binary.
	BinDir string
	// ExtensionsBinary is the koord-queue-controllers binary to measure;
	// empty builds ./cmd/extensions into BinDir.
	ExtensionsBinary string
	// Profiles serves both binaries' /debug/pprof and writes into Dir
	// their CPU profiles while the Jobs run (cpu-<binary>-<n>.pprof) and
	// their heap profiles at the end (heap-<binary>.pprof).
	Profiles bool
	Command  string
	Short    bool
	Progress io.Writer
}

// Run runs the scenario.
func Run(ctx context.Context, opts Options) (*checker.Result, error) {
	s := scenario.Jobs(opts.Short)
	extensions, err := prepare(ctx, opts)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	c, stop, err := startCluster(ctx, opts.Dir, cluster.Options{Nodes: 4, NodeCPU: "32", PodRunTime: time.Second, AuditWrites: true})
	if err != nil {
		return nil, err
	}
	defer stop()
	r := &run{s: &s, opts: opts, c: c, createJobs: func(ctx context.Context, gen client.Client) (time.Time, error) {
		return createJobs(ctx, gen, &s)
	}}
	out, err := r.run(ctx, opts.QueueBinary, extensions)
	if err != nil {
		return nil, fmt.Errorf("%w (logs in %s)", err, c.LogDir())
	}
	res := out.res
	allComplete := out.jobs.last().Sub(out.lastCreated).Seconds()
	res.Extra = map[string]float64{
		"seconds from the last Job created to all Complete":    allComplete,
		"Jobs completed per second after the last was created": float64(out.jobs.want) / max(allComplete, 0.001),
		"admission rate / Koord-Queue's at QPS 50":             res.AdmissionsPerSecond / scenario.KoordQueueJobsRateQPS50,
		"admission rate / Koord-Queue's at QPS 500":            res.AdmissionsPerSecond / scenario.KoordQueueJobsRateQPS500,
		"extensions CPU seconds":                               out.ext.CPUSeconds,
		"extensions peak RSS MiB":                              float64(out.ext.PeakRSSKiB) / 1024,
	}
	for k, v := range out.ext.Requests {
		res.Extra["extensions' API requests, "+k] = v
	}
	// What drives the extensions' CPU: how often a Job is looked at.
	for k, v := range out.ext.Reconciles {
		res.Extra["extensions' reconciles per Job, "+k] = v / float64(out.jobs.want)
	}
	// What each write is for, from the API server's audit log: every
	// write of each binary, events included, by verb, resource and answer.
	for _, program := range []string{"koord-queue-controllers", "koord-queue"} {
		writes, err := cluster.WritesBy(c.AuditLog(), program)
		if err != nil {
			return nil, err
		}
		total := 0
		for w, n := range writes {
			res.Extra[program+" writes per Job, "+w.String()] = float64(n) / float64(out.jobs.want)
			total += n
		}
		res.Extra[program+" writes per Job, all"] = float64(total) / float64(out.jobs.want)
	}
	res.Check(s.Bounds)
	return res, harness.WriteResults(opts.Dir, res, out.recorder)
}

// prepare creates opts.Dir and returns the extensions' binary, built into
// opts.BinDir unless opts names one.
func prepare(ctx context.Context, opts Options) (string, error) {
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return "", fmt.Errorf("creating %s: %w", opts.Dir, err)
	}
	if opts.ExtensionsBinary != "" {
		return opts.ExtensionsBinary, nil
	}
	return cluster.BuildBinary(ctx, "./cmd/extensions", opts.BinDir, "koord-queue-controllers")
}

// startCluster starts a local cluster in <dir>/cluster with koord-queue's
// CRDs; stop stops it, keeping its logs.
func startCluster(ctx context.Context, dir string, o cluster.Options) (c *cluster.Cluster, stop func(), err error) {
	// The cluster's kubeconfig names its certificates by absolute path.
	clusterDir, err := filepath.Abs(filepath.Join(dir, "cluster"))
	if err != nil {
		return nil, nil, fmt.Errorf("finding the cluster's directory: %w", err)
	}
	_ = os.RemoveAll(clusterDir)
	if err := os.MkdirAll(clusterDir, 0o755); err != nil {
		return nil, nil, fmt.Errorf("creating %s: %w", clusterDir, err)
	}
	o.Dir = clusterDir
	if c, err = cluster.Start(ctx, o); err != nil {
		return nil, nil, fmt.Errorf("starting the local cluster: %w", err)
	}
	stop = func() {
		c.Stop(true) // keeps the logs; etcd's data is not worth keeping
		_ = os.RemoveAll(filepath.Join(clusterDir, "etcd"))
	}
	if err := c.InstallCRDs(testenv.CRDDir()); err != nil {
		stop()
		return nil, nil, err
	}
	return c, stop, nil
}

// run is one run of Jobs on a started cluster, with both binaries.
type run struct {
	s    *scenario.Scenario
	opts Options
	c    *cluster.Cluster
	// setup, when set, creates what the quotas need before koord-queue
	// starts, besides the namespaces.
	setup func(ctx context.Context, gen client.Client) error
	// createJobs creates the scenario's Jobs and returns when the last
	// was created.
	createJobs func(ctx context.Context, gen client.Client) (time.Time, error)
}

// outcome is what a run measured: the result summarized (its bounds not
// yet checked), the recorder, what the extensions used, the Jobs seen
// complete, and when the last Job was created.
type outcome struct {
	res         *checker.Result
	recorder    *checker.Recorder
	ext         controller.Stats
	jobs        *completions
	lastCreated time.Time
}

func (r *run) run(ctx context.Context, queueBinary, extensionsBinary string) (*outcome, error) {
	cfg, kubeconfig, logDir := r.c.Config, r.c.Kubeconfig, r.c.LogDir()
	genClient, err := kube.Client(cfg, "perf-generator")
	if err != nil {
		return nil, err
	}
	checkClient, err := kube.Client(cfg, "perf-checker")
	if err != nil {
		return nil, err
	}
	// The kwok nodes are the cluster's capacity.
	if err := generator.CreateNamespaces(ctx, genClient, r.s); err != nil {
		return nil, err
	}
	if r.setup != nil {
		if err := r.setup(ctx, genClient); err != nil {
			return nil, err
		}
	}
	jobsDone := newCompletions(r.s.Units())
	jobInformer, err := jobInformer(cfg, jobsDone)
	if err != nil {
		return nil, err
	}

	start := time.Now()
	recorder := checker.NewRecorder(r.s, start, r.s.Units())
	informersCtx, stopInformers := context.WithCancel(ctx)
	defer stopInformers()
	if err := recorder.Watch(informersCtx, kube.UnitListWatch(checkClient)); err != nil {
		return nil, err
	}
	go jobInformer.RunWithContext(informersCtx)
	if !toolscache.WaitForCacheSync(ctx.Done(), jobInformer.HasSynced) {
		return nil, fmt.Errorf("job informer did not sync: %w", ctx.Err())
	}

	ports, err := cluster.FreePorts(5)
	if err != nil {
		return nil, err
	}
	var queueArgs, extArgs []string
	queuePprof, extPprof := cluster.Loopback(ports[3]), cluster.Loopback(ports[4])
	if r.opts.Profiles {
		queueArgs = []string{"--pprof-bind-address=" + queuePprof}
		extArgs = []string{"--pprof-bind-address=" + extPprof}
	}
	queue, err := controller.Start(ctx, queueBinary, kubeconfig, r.s.QPS, r.s.Burst, filepath.Join(logDir, "koord-queue.log"), queueArgs...)
	if err != nil {
		return nil, err
	}
	queueStopped := false
	defer func() {
		if !queueStopped {
			queue.Stop()
		}
	}()
	metricsAddr, probeAddr := cluster.Loopback(ports[0]), cluster.Loopback(ports[1])
	// The extensions at their defaults (QPS, burst, extensions enabled);
	// only the addresses are the harness's, and no leader election.
	ext, err := controller.StartBinary(ctx, extensionsBinary, filepath.Join(logDir, "koord-queue-controllers.log"), metricsAddr, probeAddr,
		append([]string{
			"--kubeconfig=" + kubeconfig,
			"--leader-elect=false",
			"--metrics-bind-address=" + metricsAddr,
			"--metrics-secure=false", // scraped over plain HTTP by the harness
			"--health-probe-bind-address=" + probeAddr,
			"--webhook-port=" + strconv.Itoa(ports[2]),
		}, extArgs...)...,
	)
	if err != nil {
		return nil, err
	}
	defer ext.Stop()
	var profilers []*controller.Profiler
	if r.opts.Profiles {
		// What starting cost, which the profiles leave out.
		queueCPU, _ := queue.CPUSeconds()
		extCPU, _ := ext.CPUSeconds()
		if r.opts.Progress != nil {
			fmt.Fprintf(r.opts.Progress, "  %s: CPU seconds once ready: koord-queue %.2f, koord-queue-controllers %.2f\n", r.s.Name, queueCPU, extCPU)
		}
		profilers = []*controller.Profiler{
			controller.StartProfiles(ctx, "koord-queue", queuePprof, r.opts.Dir),
			controller.StartProfiles(ctx, "koord-queue-controllers", extPprof, r.opts.Dir),
		}
	}
	if err := generator.CreateQuotas(ctx, genClient, r.s); err != nil {
		return nil, err
	}

	// The Jobs are created while their progress is reported.
	created := make(chan error, 1)
	var lastCreated time.Time
	go func() {
		var err error
		lastCreated, err = r.createJobs(ctx, genClient)
		created <- err
	}()
	progress := time.NewTicker(10 * time.Second)
	defer progress.Stop()
	for done := false; !done; {
		select {
		case err := <-created:
			if err != nil {
				return nil, err
			}
			created = nil
		case <-jobsDone.all:
			if created != nil {
				if err := <-created; err != nil {
					return nil, err
				}
			}
			done = true
		case <-queue.Done():
			return nil, queue.Err()
		case <-ext.Done():
			return nil, ext.Err()
		case <-progress.C:
			if r.opts.Progress != nil {
				fmt.Fprintf(r.opts.Progress, "  %s %4.0fs: %d Jobs complete; units: %s\n", r.s.Name, time.Since(start).Seconds(), jobsDone.count(), recorder)
			}
		case <-ctx.Done():
			return nil, fmt.Errorf("%d of %d Jobs complete after %v: %s", jobsDone.count(), jobsDone.want, r.s.Timeout, recorder)
		}
	}
	// The extensions mark each unit Succeed after its Job completes.
	select {
	case <-recorder.Done():
	case <-ctx.Done():
		return nil, fmt.Errorf("every Job completed but not every unit finished: %s", recorder)
	}
	for _, p := range profilers {
		if err := p.Stop(ctx); err != nil {
			return nil, err
		}
	}
	queueStopped = true
	st := queue.Stop()
	extStats := ext.Stop()

	res := recorder.Summarize(r.s)
	res.Short, res.Command = r.opts.Short, r.opts.Command
	res.Controller = harness.BinaryStats([]controller.Stats{st}, res.WallSeconds)
	return &outcome{res: res, recorder: recorder, ext: extStats, jobs: jobsDone, lastCreated: lastCreated}, nil
}

// createJobs creates every suspended Job at once and returns when the last
// was created.
func createJobs(ctx context.Context, c client.Client, s *scenario.Scenario) (time.Time, error) {
	leaf, set := s.Leaves()[0], s.Sets[0]
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(createWorkers)
	for i := range set.Count {
		g.Go(func() error {
			if err := c.Create(ctx, job(leaf.Name, set.Class, i, "")); err != nil {
				return fmt.Errorf("creating Job %d: %w", i, err)
			}
			return nil
		})
	}
	err := g.Wait()
	return time.Now(), err
}

// job is a suspended Job of class.Pods pods (one if unset) sharing
// class.CPU, running class.Runtime on kwok nodes, charged to quota. Its pod
// template carries the class's label and, when level is set, asks for all
// its pods within one domain of that level (the node label a Topology
// names).
func job(quota string, class scenario.Class, i int, level string) *batchv1.Job {
	pods := int32(max(class.Pods, 1))
	annotations := map[string]string{cluster.PodRunTimeAnnotation: class.Runtime.String()}
	if level != "" {
		annotations[topology.AnnotationPodSetRequiredTopologyKueue] = level
	}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name:      fmt.Sprintf("%s-%05d", class.Name, i),
			Namespace: generator.UnitNamespace(quota),
			Labels:    map[string]string{elasticquotav1alpha1.LabelQuotaName: quota, checker.LabelClass: class.Name},
		},
		Spec: batchv1.JobSpec{
			Suspend:     ptr.To(true),
			Parallelism: ptr.To(pods),
			Completions: ptr.To(pods),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{checker.LabelClass: class.Name}, Annotations: annotations},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{
						Name: "work", Image: "busybox",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU: *resource.NewQuantity(class.CPU/int64(pods), resource.DecimalSI),
						}},
					}},
				},
			},
		},
	}
}

// completions counts Jobs with a true Complete condition.
type completions struct {
	mu       sync.Mutex
	want     int
	complete map[string]bool
	lastAt   time.Time
	all      chan struct{}
}

func newCompletions(want int) *completions {
	return &completions{want: want, complete: map[string]bool{}, all: make(chan struct{})}
}

func (c *completions) observe(obj any) {
	j, ok := obj.(*batchv1.Job)
	if !ok {
		return
	}
	for _, cond := range j.Status.Conditions {
		if cond.Type != batchv1.JobComplete || cond.Status != corev1.ConditionTrue {
			continue
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		key := j.Namespace + "/" + j.Name
		if c.complete[key] {
			return
		}
		c.complete[key] = true
		c.lastAt = time.Now()
		if len(c.complete) == c.want {
			close(c.all)
		}
		return
	}
}

func (c *completions) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.complete)
}

func (c *completions) last() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastAt
}

// jobInformer watches every Job through a client of its own.
func jobInformer(cfg *rest.Config, c *completions) (toolscache.SharedIndexInformer, error) {
	clientset, err := kubernetes.NewForConfig(kube.ConfigFor(cfg, "perf-jobs", kube.HarnessQPS, kube.HarnessBurst))
	if err != nil {
		return nil, fmt.Errorf("building Job client: %w", err)
	}
	inf := informers.NewSharedInformerFactory(clientset, 0).Batch().V1().Jobs().Informer()
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    c.observe,
		UpdateFunc: func(_, obj any) { c.observe(obj) },
	}); err != nil {
		return nil, fmt.Errorf("watching Jobs: %w", err)
	}
	return inf, nil
}
