package forecast

import (
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Learner learns how long units run, per quota and size class, from the
// units that finished: a decaying average, so that a quota whose jobs
// change is followed within a few of them. It keeps one number per quota
// and class, nothing per unit, and is rebuilt after a restart by observing
// the finished units still in the cluster, oldest first.
type Learner struct {
	// Weight is how much one finished unit moves the average (0 < Weight
	// <= 1); DefaultWeight when zero.
	Weight  float64
	average map[sizeKey]float64 // seconds
}

// DefaultWeight has the last five finished units carry about two thirds of
// the average.
const DefaultWeight = 0.2

type sizeKey struct {
	quota string
	class int
}

// SizeClass buckets a request by the order of magnitude of its CPU cores
// and of its GPUs: units of one class in one quota are taken to run alike.
func SizeClass(request corev1.ResourceList) int {
	cores := request.Cpu().AsApproximateFloat64()
	gpus := 0.0
	if q, ok := request["nvidia.com/gpu"]; ok {
		gpus = q.AsApproximateFloat64()
	}
	return int(math.Log2(1+max(cores, 0))) + 32*int(math.Log2(1+max(gpus, 0)))
}

// Observe records that a unit of quota asking request ran for runtime.
func (l *Learner) Observe(quota string, request corev1.ResourceList, runtime time.Duration) {
	if runtime <= 0 {
		return
	}
	if l.average == nil {
		l.average = map[sizeKey]float64{}
	}
	w := l.Weight
	if w <= 0 || w > 1 {
		w = DefaultWeight
	}
	k := sizeKey{quota, SizeClass(request)}
	if avg, ok := l.average[k]; ok {
		l.average[k] = avg + w*(runtime.Seconds()-avg)
	} else {
		l.average[k] = runtime.Seconds()
	}
}

// Runtime is the learned runtime of a unit of quota asking request, and
// whether there is one.
func (l *Learner) Runtime(quota string, request corev1.ResourceList) (time.Duration, bool) {
	avg, ok := l.average[sizeKey{quota, SizeClass(request)}]
	if !ok {
		return 0, false
	}
	return time.Duration(avg * float64(time.Second)).Round(time.Second), true
}
