package policy

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
)

// Annotations koord-queue adds to the original's. Like every koord-queue/*
// annotation they may be set on an ElasticQuota (copied to its Queue) or on
// the Queue itself.
const (
	// AnnotationPreemptRunning "true" lets in-queue preemption
	// (enable-queueunit-preemption) evict units whose pods already run, not
	// only admitted-but-not-running ones. Default "false", as in the original.
	AnnotationPreemptRunning = "koord-queue/preempt-running"
	// AnnotationLowPriorityMaxWait (a duration such as "30m") turns on
	// starvation protection for the Intelligent policy: a low-band unit that
	// has waited this long since it was first enqueued is served before the
	// high band, oldest first, and blocks like a high head until admitted.
	// Unset or "0": off, as in the original.
	AnnotationLowPriorityMaxWait = "koord-queue/low-priority-max-wait"
	// AnnotationPreemptionDelay (a duration such as "2s") is how long a
	// unit that could evict lower-priority units of its own quota
	// (enable-queueunit-preemption) first waits for the quota to free by
	// itself, taking what frees before anyone else, before it evicts.
	// Default DefaultPreemptionDelay; "0": evict at once, as the original.
	AnnotationPreemptionDelay = "koord-queue/preemption-delay"
)

// DefaultPreemptionDelay is the preemption delay of a queue that does not
// set koord-queue/preemption-delay: short against any job worth evicting
// for, long against the moment between a unit's end and koord-queue
// hearing of it (tens to hundreds of milliseconds on a busy API server),
// when a preemptor would otherwise evict units whose quota was about to be
// its anyway.
const DefaultPreemptionDelay = 2 * time.Second

// Config is how one queue takes its units.
type Config struct {
	// Policy is Priority (the default when empty), Block or Intelligent.
	Policy schedulingv1alpha1.QueuePolicy
	// PriorityThreshold splits Intelligent's bands: priority >= threshold
	// is high.
	PriorityThreshold int32
	// MaxDepth bounds how many units from the head one scan considers; 0
	// means no bound.
	MaxDepth int
	// WaitForPodsRunning allows one admitted-but-not-running unit at a time.
	WaitForPodsRunning bool
	// EnablePreemption lets a unit evict admitted units of lower priority
	// in its own quota.
	EnablePreemption bool
	// PreemptRunning extends EnablePreemption to units whose pods run.
	PreemptRunning bool
	// LowPriorityMaxWait enables Intelligent's starvation protection; 0 is off.
	LowPriorityMaxWait time.Duration
	// PreemptionDelay is how long a head first waits, holding what frees,
	// before evicting lower-priority units of its quota (EnablePreemption);
	// 0 evicts at once.
	PreemptionDelay time.Duration
}

// DefaultConfig is the Priority policy with Koord-Queue's defaults.
func DefaultConfig() Config {
	return Config{Policy: schedulingv1alpha1.QueuePolicyPriority, PriorityThreshold: schedulingv1alpha1.DefaultPriorityThreshold,
		PreemptionDelay: DefaultPreemptionDelay}
}

// ConfigFromQueue reads a queue's policy and koord-queue/* annotations.
// A malformed annotation keeps its default and is reported in the joined
// error, so the queue keeps working while the user is told.
func ConfigFromQueue(p schedulingv1alpha1.QueuePolicy, annotations map[string]string) (Config, error) {
	c := DefaultConfig()
	var errs []error
	switch p {
	case "", schedulingv1alpha1.QueuePolicyPriority:
	case schedulingv1alpha1.QueuePolicyBlock, schedulingv1alpha1.QueuePolicyIntelligent:
		c.Policy = p
	default:
		errs = append(errs, fmt.Errorf("queue policy %q is not Priority, Block or Intelligent; using Priority", p))
	}
	if v, ok := annotations[schedulingv1alpha1.AnnotationPriorityThreshold]; ok {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil {
			errs = append(errs, fmt.Errorf("annotation %s: %w", schedulingv1alpha1.AnnotationPriorityThreshold, err))
		} else {
			c.PriorityThreshold = int32(n)
		}
	}
	if v, ok := annotations[schedulingv1alpha1.AnnotationMaxDepth]; ok {
		n, err := strconv.Atoi(v)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("annotation %s: %w", schedulingv1alpha1.AnnotationMaxDepth, err))
		case n < 0:
			errs = append(errs, fmt.Errorf("annotation %s: %d is negative", schedulingv1alpha1.AnnotationMaxDepth, n))
		default:
			c.MaxDepth = n
		}
	}
	for _, b := range []struct {
		key string
		dst *bool
	}{
		{schedulingv1alpha1.AnnotationWaitForPodsRunning, &c.WaitForPodsRunning},
		{schedulingv1alpha1.AnnotationEnableQueueUnitPreemption, &c.EnablePreemption},
		{AnnotationPreemptRunning, &c.PreemptRunning},
	} {
		if v, ok := annotations[b.key]; ok {
			t, err := strconv.ParseBool(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("annotation %s: %w", b.key, err))
			}
			*b.dst = t
		}
	}
	for _, d := range []struct {
		key string
		dst *time.Duration
	}{
		{AnnotationLowPriorityMaxWait, &c.LowPriorityMaxWait},
		{AnnotationPreemptionDelay, &c.PreemptionDelay},
	} {
		v, ok := annotations[d.key]
		if !ok {
			continue
		}
		t, err := time.ParseDuration(v)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("annotation %s: %w", d.key, err))
		case t < 0:
			errs = append(errs, fmt.Errorf("annotation %s: %s is negative", d.key, v))
		default:
			*d.dst = t
		}
	}
	return c, errors.Join(errs...)
}
