// Package compare puts Kueue's scheduler performance test and
// koord-queue's harness side by side: it runs Kueue's own runner and
// minimalkueue (built unchanged from the pinned release by
// hack/ensure-tools.sh kueue) and reads what they report, turns both
// systems' results into one Measurement each, and writes the table of
// `make perf-compare` (test/performance/cmd/perfcompare).
package compare

import (
	"fmt"
	"os"
	"time"

	"sigs.k8s.io/yaml"
)

// KueueSummary is the runner's summary.yaml, as Kueue's recorder writes it
// (test/performance/scheduler/runner/recorder.Summary at the pinned
// version) and its checker reads it: strictly, so that a field Kueue adds
// or renames fails the parse rather than being read as zero.
type KueueSummary struct {
	ClusterQueueClasses map[string]KueueCQClass       `json:"clusterQueueClasses"`
	WorkloadClasses     map[string]KueueWorkloadClass `json:"workloadClasses"`
	DroppedWLEvents     uint64                        `json:"droppedWorkloadEvents"`
}

// KueueCQClass is one class of ClusterQueues: what their status said they
// used (CPU in mCPU × ms) and their nominal quota (mCPU), summed.
type KueueCQClass struct {
	CPUUsed         int64     `json:"cpuUsed"`
	CPUAverageUsage int64     `json:"cpuAverageUsage"`
	NominalQuota    int64     `json:"nominalQuota"`
	FirstEventTime  time.Time `json:"firstEventTime"`
	LastEventTime   time.Time `json:"lastEventTime"`
}

// UsagePercent is the class's usage as Kueue's checker computes it.
func (c KueueCQClass) UsagePercent() float64 {
	elapsed := c.LastEventTime.Sub(c.FirstEventTime).Milliseconds()
	if c.NominalQuota == 0 || elapsed == 0 {
		return 0
	}
	return float64(c.CPUUsed) * 100 / (float64(c.NominalQuota) * float64(elapsed))
}

// KueueWorkloadClass is one class of workloads: how many, how often they
// were evicted, and the mean time from the runner seeing each created to
// seeing it admitted (and finished), in whole milliseconds.
type KueueWorkloadClass struct {
	Count                    int32 `json:"count"`
	TotalEvictions           int32 `json:"totalEvictions"`
	AverageTimeToAdmissionMs int64 `json:"averageTimeToAdmissionMs"`
	AverageTimeToFinishMs    int64 `json:"averageTimeToFinishMs"`
}

// KueueCmdStats is minimalkueue.stats.yaml: the runner's account of
// minimalkueue's process (stats.CmdStats): wall time from its start to its
// exit, user and system CPU, and the peak resident set (getrusage's
// ru_maxrss, KiB on Linux).
type KueueCmdStats struct {
	WallMs int64 `json:"wallMs"`
	UserMs int64 `json:"userMs"`
	SysMs  int64 `json:"sysMs"`
	Maxrss int64 `json:"maxrss"`
}

// KueueRangeSpec is a rangespec.yaml: the bounds Kueue's checker holds a
// run to.
type KueueRangeSpec struct {
	Cmd struct {
		MaxWallMs int64 `json:"maxWallMs"`
	} `json:"cmd"`
	ClusterQueueClassesMinUsage      map[string]float64 `json:"clusterQueueClassesMinUsage"`
	WlClassesMaxAvgTimeToAdmissionMs map[string]int64   `json:"wlClassesMaxAvgTimeToAdmissionMs"`
}

// ReadKueueSummary reads a summary.yaml.
func ReadKueueSummary(path string) (*KueueSummary, error) {
	s := &KueueSummary{}
	return s, readStrict(path, s)
}

// ReadKueueCmdStats reads a minimalkueue.stats.yaml.
func ReadKueueCmdStats(path string) (*KueueCmdStats, error) {
	s := &KueueCmdStats{}
	return s, readStrict(path, s)
}

// ReadKueueRangeSpec reads a rangespec.yaml.
func ReadKueueRangeSpec(path string) (*KueueRangeSpec, error) {
	s := &KueueRangeSpec{}
	return s, readStrict(path, s)
}

func readStrict(path string, into any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	if err := yaml.UnmarshalStrict(data, into); err != nil {
		return fmt.Errorf("parsing %s: %w", path, err)
	}
	return nil
}

// KueueGeneratorConfig is a generator.yaml of Kueue's runner (the part
// without topology-aware scheduling): cohorts of ClusterQueues, and the
// workloads each ClusterQueue receives.
type KueueGeneratorConfig struct {
	Cohorts []struct {
		ClassName  string `json:"className"`
		Count      int    `json:"count"`
		QueuesSets []struct {
			ClassName           string `json:"className"`
			Count               int    `json:"count"`
			NominalQuota        int64  `json:"nominalQuota"`
			BorrowingLimit      int64  `json:"borrowingLimit"`
			ReclaimWithinCohort string `json:"reclaimWithinCohort"`
			WithinClusterQueue  string `json:"withinClusterQueue"`
			WorkloadsSets       []struct {
				Count              int   `json:"count"`
				CreationIntervalMs int64 `json:"creationIntervalMs"`
				Workloads          []struct {
					ClassName string `json:"className"`
					RuntimeMs int64  `json:"runtimeMs"`
					Priority  int32  `json:"priority"`
					Request   int64  `json:"request"`
				} `json:"workloads"`
			} `json:"workloadsSets"`
		} `json:"queuesSets"`
	} `json:"cohorts"`
}

// ReadKueueGeneratorConfig reads a generator.yaml (leniently: the
// topology-aware fields are not modelled).
func ReadKueueGeneratorConfig(path string) (*KueueGeneratorConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	c := &KueueGeneratorConfig{}
	if err := yaml.Unmarshal(data, c); err != nil {
		return nil, fmt.Errorf("parsing %s: %w", path, err)
	}
	return c, nil
}

// Workloads is how many workloads the config creates.
func (c *KueueGeneratorConfig) Workloads() int {
	n := 0
	for _, co := range c.Cohorts {
		for _, qs := range co.QueuesSets {
			for _, ws := range qs.WorkloadsSets {
				n += co.Count * qs.Count * ws.Count * len(ws.Workloads)
			}
		}
	}
	return n
}
