package compare

import (
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/koord-queue/koord-queue/test/cluster"
	"github.com/koord-queue/koord-queue/test/performance/checker"
)

// SystemAgents are the programs (user agents up to their first "/") of
// each system's components: Kueue's manager names itself "kueue"
// (sigs.k8s.io/kueue/pkg/util/useragent); koord-queue's binaries take
// client-go's default, their binaries' names.
var SystemAgents = map[string][]string{
	Kueue:      {"kueue"},
	KoordQueue: {"koord-queue", "koord-queue-controllers"},
}

// ClusterAgents are the cluster's components whose writes a Job causes:
// the Job controller and the rest of kube-controller-manager, the scheduler
// (bindings, unschedulable pods) and kwok (the pods' and nodes' status).
var ClusterAgents = []string{"kube-controller-manager", "kube-scheduler", "kwok"}

// jobRecord follows the Jobs of a run and their pods, as an informer on
// each sees them: when each Job was created (the harness sending it), its
// pod first seen Running (or past it), whether it completed, and how often
// it was suspended again after being released (an eviction: both systems
// evict a Job by suspending it).
type jobRecord struct {
	mu        sync.Mutex
	want      int
	class     map[string]string
	created   map[string]time.Time
	running   map[string]time.Time
	released  map[string]bool
	complete  map[string]time.Time
	evictions int
	all       chan struct{}
}

func newJobRecord(want int) *jobRecord {
	return &jobRecord{
		want: want, class: map[string]string{}, created: map[string]time.Time{}, running: map[string]time.Time{},
		released: map[string]bool{}, complete: map[string]time.Time{}, all: make(chan struct{}),
	}
}

// creating records that the Job is about to be sent.
func (r *jobRecord) creating(j *batchv1.Job, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := j.Namespace + "/" + j.Name
	r.created[key] = at
	r.class[key] = j.Labels[checker.LabelClass]
}

// observeJob takes an informer's view of a Job.
func (r *jobRecord) observeJob(obj any, at time.Time) {
	j, ok := obj.(*batchv1.Job)
	if !ok {
		return
	}
	key := j.Namespace + "/" + j.Name
	suspended := j.Spec.Suspend != nil && *j.Spec.Suspend
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case !suspended:
		r.released[key] = true
	case r.released[key]:
		r.released[key] = false
		r.evictions++
	}
	if _, done := r.complete[key]; done {
		return
	}
	for _, c := range j.Status.Conditions {
		if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
			r.complete[key] = at
			if len(r.complete) == r.want {
				close(r.all)
			}
			return
		}
	}
}

// observePod takes an informer's view of a pod: the first time a Job's pod
// is seen Running or finished is when the Job started.
func (r *jobRecord) observePod(obj any, at time.Time) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if p.Status.Phase != corev1.PodRunning && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
		return
	}
	job := p.Labels[batchv1.JobNameLabel]
	if job == "" {
		return
	}
	key := p.Namespace + "/" + job
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, seen := r.running[key]; !seen {
		r.running[key] = at
	}
}

func (r *jobRecord) counts() (created, running, complete, evictions int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.created), len(r.running), len(r.complete), r.evictions
}

// lastComplete is when the last Job was seen complete.
func (r *jobRecord) lastComplete() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	var last time.Time
	for _, t := range r.complete {
		if t.After(last) {
			last = t
		}
	}
	return last
}

// toRunning is ToRunning of the Jobs recorded; of a run cut off at end,
// with each Job not yet started counted as starting at end.
func (r *jobRecord) toRunning(end time.Time, cutOff bool) map[string]Latency {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !cutOff {
		return ToRunning(r.created, r.running, r.class)
	}
	running := maps.Clone(r.running)
	for key := range r.created {
		if _, ok := running[key]; !ok {
			running[key] = end
		}
	}
	return ToRunning(r.created, running, r.class)
}

// ToRunning is, per class, the mean and 90th percentile (nearest rank) of
// the time from each Job's creation to its start, in seconds, over the
// Jobs that started. Given a run cut off, with the Jobs not yet started
// as starting at the cut-off, each is a lower bound of the whole run's:
// no Job's time is counted longer than it was, and a mean and a nearest
// rank only grow with the times.
func ToRunning(created, running map[string]time.Time, class map[string]string) map[string]Latency {
	byClass := map[string][]float64{}
	for key, start := range running {
		c, ok := created[key]
		if !ok {
			continue
		}
		byClass[class[key]] = append(byClass[class[key]], start.Sub(c).Seconds())
	}
	out := map[string]Latency{}
	for cl, ds := range byClass {
		slices.Sort(ds)
		sum := 0.0
		for _, d := range ds {
			sum += d
		}
		rank := int(math.Ceil(0.9*float64(len(ds)))) - 1
		out[cl] = Latency{Mean: sum / float64(len(ds)), P90: ds[max(rank, 0)]}
	}
	return out
}

// AgentOf is the program a user agent names: what precedes its first "/"
// (client-go's default is "<binary>/<version> (<os>/<arch>) ...").
func AgentOf(userAgent string) string {
	program, _, _ := strings.Cut(userAgent, "/")
	return program
}

// WritesByAgent counts every write in the audit log at path and its
// rotated backups by the writer's program (AgentOf) and kind (verb,
// resource with its subresource, answer).
func WritesByAgent(path string) (map[string]map[string]int, error) {
	files, err := cluster.AuditLogFiles(path)
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]int{}
	for _, file := range files {
		err := cluster.ScanAuditLog(file, func(line []byte) error {
			userAgent, w, ok, err := cluster.ParseAuditWrite(line)
			if err != nil || !ok {
				return err
			}
			agent := AgentOf(userAgent)
			if out[agent] == nil {
				out[agent] = map[string]int{}
			}
			out[agent][w.String()]++
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// EventsOf counts events of the systems' own objects (QueueUnits,
// Workloads) and of Jobs sent by anyone but the Job controller, by sender
// (the reporting controller, else the source component), the object's
// kind and the reason ("koord-queue QueueUnit Preempted"), each as often
// as it happened (its count, or its series' count): what says why Jobs
// were suspended again.
func EventsOf(events []corev1.Event) map[string]int {
	out := map[string]int{}
	for _, e := range events {
		sender := e.ReportingController
		if sender == "" {
			sender = e.Source.Component
		}
		switch kind := e.InvolvedObject.Kind; {
		case kind == "QueueUnit" || kind == "Workload":
		case kind == "Job" && sender != jobController:
		default:
			continue
		}
		n := max(int(e.Count), 1)
		if e.Series != nil {
			n = max(n, int(e.Series.Count))
		}
		out[sender+" "+e.InvolvedObject.Kind+" "+e.Reason] += n
	}
	return out
}

// jobController is the Job controller's name as the sender of its events.
const jobController = "job-controller"
