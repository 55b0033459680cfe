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
)

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
}

// DefaultConfig is the Priority policy with Koord-Queue's defaults.
func DefaultConfig() Config {
	return Config{Policy: schedulingv1alpha1.QueuePolicyPriority, PriorityThreshold: schedulingv1alpha1.DefaultPriorityThreshold}
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
	if v, ok := annotations[AnnotationLowPriorityMaxWait]; ok {
		d, err := time.ParseDuration(v)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("annotation %s: %w", AnnotationLowPriorityMaxWait, err))
		case d < 0:
			errs = append(errs, fmt.Errorf("annotation %s: %s is negative", AnnotationLowPriorityMaxWait, v))
		default:
			c.LowPriorityMaxWait = d
		}
	}
	return c, errors.Join(errs...)
}
