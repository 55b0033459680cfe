package compare

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// JobsMarkdown is perf-compare-jobs' summary.md: the report's header, the
// table (BuildJobsTable), each component's CPU and peak RSS, the writes
// per Job by component and kind, the runs, and how each figure is
// obtained. r.Config names the shape.
func (r Report) JobsMarkdown() string {
	var b strings.Builder
	r.writeHead(&b, fmt.Sprintf("Kueue and koord-queue on batch Jobs: Kueue's `%s` shape", r.Config))
	b.WriteString("\n## Each component's CPU and peak RSS\n\n| pair | system | component | CPU (s) | peak RSS (MiB) | resident at the end, anonymous / file-backed (MiB) |\n|---|---|---|---|---|---|\n")
	for _, m := range r.Measurements {
		for _, c := range m.Components {
			fmt.Fprintf(&b, "| %d | %s | %s | %.1f | %.0f | %.0f / %.0f |\n", m.Pair, m.System, c.Name, c.CPUSeconds, c.PeakRSSMiB, c.AnonMiB, c.FileMiB)
		}
	}
	b.WriteString("\n## API writes per Job, by component and what they wrote\n\n")
	b.WriteString("Means over the runs of each system; a write is its verb, resource (with subresource) and the API server's answer.\n\n")
	writeKindTables(&b, "| component | write | per Job |\n|---|---|---|", func(system string) []KindPerJob {
		return WritesPerJobByKind(r.Measurements, system)
	}, func(row KindPerJob) string { return fmt.Sprintf("| %s | %s | %.3f |", row.Agent, row.Kind, row.PerJob) })
	b.WriteString("## Events of the systems' objects, per Job\n\n")
	b.WriteString("Means over the runs of each system: the events of QueueUnits and Workloads, and those of Jobs from anyone but the Job controller, by sender, object and reason, once every Job completed.\n\n")
	writeKindTables(&b, "| sender, object, reason | per Job |\n|---|---|", func(system string) []KindPerJob {
		return EventsPerJob(r.Measurements, system)
	}, func(row KindPerJob) string { return fmt.Sprintf("| %s | %.3f |", row.Kind, row.PerJob) })
	b.WriteString("## Runs\n\n| pair | run | system | wall | 1-minute load before → after | directory |\n|---|---|---|---|---|---|\n")
	for _, m := range r.Measurements {
		wall := fmt.Sprintf("%.1f s", m.WallSeconds)
		switch {
		case m.Error != "":
			wall = "failed: " + m.Error
		case m.CutOff:
			wall = fmt.Sprintf("cut off at %.1f s, %d of %d Jobs complete", m.WallSeconds, m.Jobs, m.JobsInShape)
		}
		fmt.Fprintf(&b, "| %d | %d | %s | %s | %.2f → %.2f | `%s` |\n", m.Pair, m.Position, m.System, wall, m.LoadBefore, m.LoadAfter, m.Dir)
	}
	b.WriteString("\n" + jobsDerivation)
	return b.String()
}

// writeKindTables writes, for each system that has rows, a table of them
// (header, then a line per row) under the system's name.
func writeKindTables(b *strings.Builder, header string, rows func(system string) []KindPerJob, line func(KindPerJob) string) {
	for _, system := range []string{Kueue, KoordQueue} {
		rs := rows(system)
		if len(rs) == 0 {
			continue
		}
		fmt.Fprintf(b, "### %s\n\n%s\n", system, header)
		for _, r := range rs {
			b.WriteString(line(r) + "\n")
		}
		b.WriteString("\n")
	}
}

// KindPerJob is how many writes or events of one kind one component made,
// per Job (Agent is empty for events, whose Kind names their sender).
type KindPerJob struct {
	Agent, Kind string
	PerJob      float64
}

// WritesPerJobByKind is, for the system's completed runs, each kind of
// write of its components and the cluster's (SystemAgents, ClusterAgents)
// per Job, averaged over the runs: the system's components first, each
// component's kinds most frequent first.
func WritesPerJobByKind(ms []Measurement, system string) []KindPerJob {
	agents := append(slices.Clone(SystemAgents[system]), ClusterAgents...)
	sums := map[[2]string]float64{}
	runs := 0
	for _, m := range ms {
		if m.System != system || m.Error != "" || m.WritesByAgent == nil || m.perJob() == 0 {
			continue
		}
		runs++
		for _, a := range agents {
			for kind, n := range m.WritesByAgent[a] {
				sums[[2]string{a, kind}] += float64(n) / float64(m.perJob())
			}
		}
	}
	var out []KindPerJob
	for k, v := range sums {
		out = append(out, KindPerJob{Agent: k[0], Kind: k[1], PerJob: v / float64(runs)})
	}
	sort.Slice(out, func(i, j int) bool {
		ai, aj := slices.Index(agents, out[i].Agent), slices.Index(agents, out[j].Agent)
		if ai != aj {
			return ai < aj
		}
		if math.Abs(out[i].PerJob-out[j].PerJob) > 1e-9 {
			return out[i].PerJob > out[j].PerJob
		}
		return out[i].Kind < out[j].Kind
	})
	return out
}

// EventsPerJob is, for the system's completed runs, each kind of event
// (Measurement.Events) per Job, averaged over the runs, most frequent
// first.
func EventsPerJob(ms []Measurement, system string) []KindPerJob {
	sums := map[string]float64{}
	runs := 0
	for _, m := range ms {
		if m.System != system || m.Error != "" || m.Events == nil || m.perJob() == 0 {
			continue
		}
		runs++
		for kind, n := range m.Events {
			sums[kind] += float64(n) / float64(m.perJob())
		}
	}
	var out []KindPerJob
	for k, v := range sums {
		out = append(out, KindPerJob{Kind: k, PerJob: v / float64(runs)})
	}
	sort.Slice(out, func(i, j int) bool {
		if math.Abs(out[i].PerJob-out[j].PerJob) > 1e-9 {
			return out[i].PerJob > out[j].PerJob
		}
		return out[i].Kind < out[j].Kind
	})
	return out
}

// jobsDerivation says how each row is obtained; both systems' are obtained
// the same way.
const jobsDerivation = `## How each figure is obtained

Each run has a fresh local cluster: etcd, kube-apiserver (every write
logged to an audit log at Metadata level), kube-controller-manager,
kube-scheduler and kwok nodes (cpu for every quota's guarantee and a
quarter more), the same binaries and flags for both systems. The harness
creates each ClusterQueue's (leaf quota's) Jobs suspended, as Kueue's runner
creates its workloads (one creator per queue and class, Job i after
(i + 1) × the class's interval); each Job has one pod asking the class's
cpu at the class's PriorityClass (preemptionPolicy Never), which kwok
completes after the class's runtime. Kueue's Jobs carry
` + "`kueue.x-k8s.io/queue-name`" + ` (no webhook configuration is installed:
its documentation's way for a Job created suspended); koord-queue's carry
their ElasticQuota's label. A ClusterQueue with withinClusterQueue:
LowerPriority is a leaf quota with ` + "`koord-queue/enable-queueunit-preemption`" + `
and ` + "`koord-queue/preempt-running`" + `: either system may evict
lower-priority Jobs of the queue, running or not. Ratios are koord-queue
over Kueue, of the medians (in the per-pair table, of the pair).

| row | how |
|---|---|
| wall | from the harness starting to create Jobs to its Job informer seeing the last Job Complete |
| time to pods running | per class, from the harness sending each Job's create to its pod informer first seeing the Job's pod Running (or finished); mean and 90th percentile (nearest rank) |
| CPU, peak RSS | each component's user + system time and VmHWM from ` + "`/proc`" + ` just before it is stopped (once every Job is complete), summed over the system's components: Kueue's manager; koord-queue and koord-queue-controllers |
| resident at the end | each component's RssAnon (heap, stacks, the Go runtime) and RssFile (the pages of its binary mapped in, which the page cache shares) from ` + "`/proc`" + ` at the same moment; VmHWM counts both |
| API writes per Job | every write (create, update, patch, delete; events and non-2xx answers included) the audit log attributes to the component's user agent, over the Jobs; the system's components are Kueue's manager (user agent ` + "`kueue`" + `) and koord-queue's two binaries |
| evictions | Jobs the Job informer saw suspended again after being released |
| events | the cluster's events of QueueUnits and Workloads, and of Jobs from anyone but the Job controller, listed once every Job completed, each counted as often as it happened; a lower bound, since event recorders drop events under load |
| kube-apiserver + etcd CPU, kube-controller-manager + kube-scheduler + kwok CPU | the processes' user + system time, sampled every second from ` + "`/proc`" + ` over the whole run, and once more just before the cluster stops |
`
