package framework

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"k8s.io/utils/ptr"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
)

// Reasons of the Warning events of a job whose declared runtime its unit
// does not take as written.
const (
	// ReasonInvalidMaxExecTime: the job's max-exec-time label is not a
	// positive integer; it is ignored.
	ReasonInvalidMaxExecTime = "InvalidMaxExecTime"
	// ReasonMaxExecTimeCapped: the job's max-exec-time label declares more
	// than the most a job may (WithMaxDeclaredExecutionTime); its unit takes
	// that most.
	ReasonMaxExecTimeCapped = "MaxExecTimeCapped"
)

// DefaultMaxDeclaredExecutionTime is the most a job's label may declare
// unless the admin says otherwise: 7 days, as far ahead as the forecast
// looks; a longer runtime would tell no forecast anything.
const DefaultMaxDeclaredExecutionTime = 7 * 24 * time.Hour

// maxExecTimeLabels are the labels a job declares its runtime with, in the
// order read: the first the job carries is its declaration.
var maxExecTimeLabels = []string{schedulingv1alpha1.LabelMaxExecTimeSeconds, schedulingv1alpha1.LabelMaxExecTimeSecondsKueue}

// ceilingSeconds is d in whole seconds, from 1 to the largest a unit's
// spec.maximumExecutionTimeSeconds holds.
func ceilingSeconds(d time.Duration) int32 {
	return int32(min(max(d/time.Second, 1), math.MaxInt32))
}

// declaredRuntime is the spec.maximumExecutionTimeSeconds a job's labels
// declare for its unit: nil when they declare none, or one that is not a
// positive integer (ignored, with a warning naming the label); at most
// ceiling seconds (cut, with a warning saying that the unit is stopped
// then). Label values are at most 63 characters: reading one is cheap.
func declaredRuntime(labels map[string]string, ceiling int32) (*int32, *Warning) {
	key, value, ok := declaration(labels)
	if !ok {
		return nil, nil
	}
	n, err := strconv.ParseInt(value, 10, 64)
	if errors.Is(err, strconv.ErrRange) && n > 0 {
		err = nil // more digits than 64 bits hold: above any ceiling
	}
	if err != nil || n <= 0 {
		return nil, &Warning{Reason: ReasonInvalidMaxExecTime, Message: fmt.Sprintf(
			"Label %s is %q, not a positive whole number of seconds; it is ignored, and the QueueUnit has no maximum execution time", key, value)}
	}
	if n > int64(ceiling) {
		return ptr.To(ceiling), &Warning{Reason: ReasonMaxExecTimeCapped, Message: fmt.Sprintf(
			"Label %s declares %s s, more than a job may (%d s, koord-queue-controllers' --max-declared-execution-time): the QueueUnit takes %d s, and is stopped (deactivated and its job suspended) once admitted that long",
			key, value, ceiling, ceiling)}
	}
	return ptr.To(int32(n)), nil
}

// declaration is the label a job declares its runtime with, and its value.
func declaration(labels map[string]string) (key, value string, ok bool) {
	for _, key := range maxExecTimeLabels {
		if value, ok := labels[key]; ok {
			return key, value, true
		}
	}
	return "", "", false
}

// declareRuntime gives u the runtime its job's labels declare (seconds, of
// declaredRuntime) and keeps u's copy of those labels the job's. The copy,
// which u took from its job when it was made, says that its limit came from
// the job: a label removed from the job clears the limit, while a limit set
// by hand on the unit of a job that never declared one is left alone. It
// reports whether u changed.
func declareRuntime(u *schedulingv1alpha1.QueueUnit, jobLabels map[string]string, seconds *int32) bool {
	_, _, declares := declaration(jobLabels)
	_, _, declared := declaration(u.Labels)
	if !declares && !declared {
		return false
	}
	changed := !ptr.Equal(u.Spec.MaximumExecutionTimeSeconds, seconds)
	u.Spec.MaximumExecutionTimeSeconds = seconds
	for _, key := range maxExecTimeLabels {
		value, onJob := jobLabels[key]
		if was, onUnit := u.Labels[key]; onUnit == onJob && was == value {
			continue
		}
		changed = true
		if !onJob {
			delete(u.Labels, key)
			continue
		}
		if u.Labels == nil {
			u.Labels = map[string]string{}
		}
		u.Labels[key] = value
	}
	return changed
}

// describeRuntime says what limit a unit now has.
func describeRuntime(u *schedulingv1alpha1.QueueUnit) string {
	if s := u.Spec.MaximumExecutionTimeSeconds; s != nil {
		return fmt.Sprintf("QueueUnit %s now may stay admitted for at most %d s (spec.maximumExecutionTimeSeconds)", u.Name, *s)
	}
	return fmt.Sprintf("QueueUnit %s now has no maximum execution time", u.Name)
}
