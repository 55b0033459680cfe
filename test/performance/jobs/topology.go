package jobs

import (
	"context"
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/test/cluster"
	"github.com/koord-queue/koord-queue/test/performance/checker"
	"github.com/koord-queue/koord-queue/test/performance/generator"
	"github.com/koord-queue/koord-queue/test/performance/harness"
	"github.com/koord-queue/koord-queue/test/performance/kube"
	"github.com/koord-queue/koord-queue/test/performance/scenario"
)

// TopologyName is the topology scenario's name on the command line.
const TopologyName = "topology"

// The node labels of the topology scenario's blocks and racks, as a cloud
// provider puts them.
const (
	BlockLabel = "cloud.provider.com/topology-block"
	RackLabel  = "cloud.provider.com/topology-rack"
)

// componentQPS is kube-controller-manager's and kube-scheduler's client
// QPS in the topology scenario: at their defaults (20 and 50) the Job
// controller, creating hundreds of pods, would set the pace.
const componentQPS = 200

// phase is one play of the topology scenario's stream of Jobs.
type phase struct {
	// name names the phase's folder and result.
	name, title string
	// level is the node label each Job's pods ask to share a domain of
	// (required); empty: no ask.
	level string
}

var topologyPhases = []phase{
	{name: "no-annotation", title: "no topology asked"},
	{name: "required-rack", title: "each Job's pods require one rack (kueue.x-k8s.io/podset-required-topology: " + RackLabel + ")", level: RackLabel},
}

// RunTopology runs scenario topology: the same stream of multi-pod Jobs
// (scenario.Topology) on a fresh cluster of racked kwok nodes once per
// phase, first without and then with a rack required of each Job, and
// measures for each phase the share of multi-pod Jobs whose pods all ran
// in one rack. Each phase writes its results to <opts.Dir>/<phase>/, with
// placement.csv (one line per Job: where its pods ran); it returns the
// phases measured so far.
func RunTopology(ctx context.Context, opts Options) ([]*checker.Result, error) {
	extensions, err := prepare(ctx, opts)
	if err != nil {
		return nil, err
	}
	var results []*checker.Result
	for _, p := range topologyPhases {
		res, err := runPhase(ctx, opts, p, extensions)
		if err != nil {
			return results, fmt.Errorf("phase %s: %w", p.name, err)
		}
		results = append(results, res)
	}
	return results, nil
}

func runPhase(ctx context.Context, opts Options, p phase, extensions string) (*checker.Result, error) {
	s := scenario.Topology(opts.Short)
	s.Name, s.Title = TopologyName+"/"+p.name, s.Title+"; "+p.title
	opts.Dir = filepath.Join(opts.Dir, p.name)
	opts.Command += " # phase " + p.name
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", opts.Dir, err)
	}
	if opts.Progress != nil {
		fmt.Fprintf(opts.Progress, "  %s: %s\n", s.Name, p.title)
	}
	ctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	racks := *s.Racks
	c, stop, err := startCluster(ctx, opts.Dir, cluster.Options{
		Nodes: racks.Nodes(), NodeCPU: strconv.FormatInt(racks.HostCPU, 10), ComponentQPS: componentQPS,
		NodeLabels: func(i int) map[string]string {
			block, rack := racks.Labels(i)
			return map[string]string{BlockLabel: block, RackLabel: rack}
		},
	})
	if err != nil {
		return nil, err
	}
	defer stop()
	r := &run{
		s: &s, opts: opts, c: c,
		setup: func(ctx context.Context, gen client.Client) error {
			return gen.Create(ctx, wrappers.Topology(scenario.TopologyName, BlockLabel, RackLabel, corev1.LabelHostname))
		},
		createJobs: func(ctx context.Context, gen client.Client) (time.Time, error) {
			return createStream(ctx, gen, &s, p.level)
		},
	}
	out, err := r.run(ctx, opts.QueueBinary, extensions)
	if err != nil {
		return nil, fmt.Errorf("%w (logs in %s)", err, c.LogDir())
	}
	gen, err := kube.Client(c.Config, "perf-placement")
	if err != nil {
		return nil, err
	}
	placed, err := readPlacements(ctx, gen, generator.UnitNamespace(s.Leaves()[0].Name))
	if err != nil {
		return nil, err
	}
	res := out.res
	frag := summarize(placed)
	res.Extra = frag.extra(s.Classes())
	res.Extra["Jobs complete"] = float64(out.jobs.count())
	res.Check(s.Bounds)
	if p.level != "" {
		// A required rack is koord-queue's promise: every Job in one.
		res.Bounds = append(res.Bounds, checker.BoundResult{
			Name: "Jobs with every pod in one rack", Want: strconv.Itoa(s.Units()), Got: strconv.Itoa(frag.oneRack), OK: frag.oneRack == s.Units(),
		})
	}
	if err := writePlacements(filepath.Join(opts.Dir, "placement.csv"), placed); err != nil {
		return nil, err
	}
	return res, harness.WriteResults(opts.Dir, res, out.recorder)
}

// createStream creates the scenario's Jobs one by one, the classes in
// turn: Job k is created k × (a set's interval / the number of sets) after
// the stream starts. It returns when the last was created.
func createStream(ctx context.Context, c client.Client, s *scenario.Scenario, level string) (time.Time, error) {
	leaf := s.Leaves()[0]
	start := time.Now()
	for k, a := range stream(s) {
		if wait := time.Until(start.Add(a.at)); wait > 0 {
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return time.Time{}, ctx.Err()
			}
		}
		if err := c.Create(ctx, job(leaf.Name, a.class, a.i, level)); err != nil {
			return time.Time{}, fmt.Errorf("creating Job %d of the stream: %w", k, err)
		}
	}
	return time.Now(), nil
}

// arrival is one Job of a stream: the i-th of its class, created at after
// the stream starts.
type arrival struct {
	class scenario.Class
	i     int
	at    time.Duration
}

// stream interleaves the scenario's sets: round k takes the k-th Job of
// each set still holding one, in the sets' order, one every set's
// interval over the number of sets.
func stream(s *scenario.Scenario) []arrival {
	var out []arrival
	for k := 0; ; k++ {
		added := false
		for _, set := range s.Sets {
			if k >= set.Count {
				continue
			}
			every := set.Interval / time.Duration(len(s.Sets))
			out = append(out, arrival{class: set.Class, i: k, at: time.Duration(len(out)) * every})
			added = true
		}
		if !added {
			return out
		}
	}
}

// placement is where one Job's pods ran.
type placement struct {
	job, class string
	// pods counts the Job's pods; racks are the racks they ran in, sorted,
	// "" for a pod not on a node or on a node without a rack label.
	pods  int
	racks []string
}

// oneRack reports whether every pod of the Job ran in one and the same rack.
func (p placement) oneRack() bool { return len(p.racks) == 1 && p.racks[0] != "" }

// readPlacements lists the pods of namespace's Jobs and the nodes they
// ran on.
func readPlacements(ctx context.Context, c client.Client, namespace string) ([]placement, error) {
	nodes := &corev1.NodeList{}
	if err := c.List(ctx, nodes); err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	rackOf := map[string]string{}
	for _, n := range nodes.Items {
		rackOf[n.Name] = n.Labels[RackLabel]
	}
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	return placements(pods.Items, rackOf), nil
}

// placements groups the pods of Jobs (batch.kubernetes.io/job-name) by Job,
// with the racks their nodes are in (rackOf, by node name), sorted by Job.
func placements(pods []corev1.Pod, rackOf map[string]string) []placement {
	byJob := map[string]*placement{}
	for _, pod := range pods {
		name := pod.Labels[batchv1.JobNameLabel]
		if name == "" {
			continue
		}
		p := byJob[name]
		if p == nil {
			p = &placement{job: name, class: pod.Labels[checker.LabelClass]}
			byJob[name] = p
		}
		p.pods++
		if rack := rackOf[pod.Spec.NodeName]; !slices.Contains(p.racks, rack) {
			p.racks = append(p.racks, rack)
		}
	}
	out := make([]placement, 0, len(byJob))
	for _, p := range byJob {
		slices.Sort(p.racks)
		out = append(out, *p)
	}
	slices.SortFunc(out, func(a, b placement) int { return strings.Compare(a.job, b.job) })
	return out
}

// fragmentation is what the placements of multi-pod Jobs add up to.
type fragmentation struct {
	// multiPod counts the Jobs of more than one pod; oneRack those whose
	// pods all ran in one rack; racks sums their racks.
	multiPod, oneRack, racks int
	byClass                  map[string][2]int // multi-pod, one rack
}

func summarize(placed []placement) fragmentation {
	f := fragmentation{byClass: map[string][2]int{}}
	for _, p := range placed {
		if p.pods < 2 {
			continue
		}
		n := f.byClass[p.class]
		f.multiPod++
		n[0]++
		f.racks += len(p.racks)
		if p.oneRack() {
			f.oneRack++
			n[1]++
		}
		f.byClass[p.class] = n
	}
	return f
}

// extra are the figures for the result: the share within one rack, of all
// multi-pod Jobs and of each class, and how many racks a Job's pods span.
func (f fragmentation) extra(classes []string) map[string]float64 {
	share := func(n [2]int) float64 {
		if n[0] == 0 {
			return 0
		}
		return 100 * float64(n[1]) / float64(n[0])
	}
	out := map[string]float64{
		"multi-pod Jobs measured":                 float64(f.multiPod),
		"multi-pod Jobs within one rack":          float64(f.oneRack),
		"multi-pod Jobs within one rack, percent": share([2]int{f.multiPod, f.oneRack}),
	}
	if f.multiPod > 0 {
		out["racks per multi-pod Job, average"] = float64(f.racks) / float64(f.multiPod)
	}
	for _, class := range classes {
		if n, ok := f.byClass[class]; ok {
			out["multi-pod Jobs within one rack, percent, "+class] = share(n)
		}
	}
	return out
}

// writePlacements writes one line per Job: its class, pods, how many racks
// they ran in, whether one, and which.
func writePlacements(path string, placed []placement) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	_ = w.Write([]string{"job", "class", "pods", "racks", "within one rack", "rack names"})
	for _, p := range placed {
		_ = w.Write([]string{p.job, p.class, strconv.Itoa(p.pods), strconv.Itoa(len(p.racks)), strconv.FormatBool(p.oneRack()), strings.Join(p.racks, " ")})
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Close()
}
