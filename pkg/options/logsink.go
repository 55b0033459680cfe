package options

import (
	"slices"
	"sync"

	"github.com/go-logr/logr"
)

// deferredValues is a logr.LogSink that keeps the key-value pairs given to
// WithValues and hands them to the sink under it only once something is
// logged. zap encodes the fields of a With at once, while
// controller-runtime gives every reconcile a logger with the reconciler's
// object and a reconcileID that, at the default level, logs nothing:
// deferred, they cost a slice append instead of an encoding. What is
// logged is the same: the values, in the order given, before the
// message's own.
type deferredValues struct {
	// sink has every WithName and WithCallDepth applied, and the values
	// before pending.
	sink    logr.LogSink
	pending []any

	once     sync.Once
	resolved logr.LogSink
}

var (
	_ logr.LogSink          = (*deferredValues)(nil)
	_ logr.CallDepthLogSink = (*deferredValues)(nil)
)

// deferValues wraps sink, which is initialised already (as logr.New does):
// calls through the wrapper come one frame deeper, which sink is told.
func deferValues(sink logr.LogSink) logr.LogSink {
	if cd, ok := sink.(logr.CallDepthLogSink); ok {
		sink = cd.WithCallDepth(1)
	}
	return &deferredValues{sink: sink}
}

// Init implements logr.LogSink: sink was initialised before it was
// wrapped (deferValues).
func (d *deferredValues) Init(logr.RuntimeInfo) {}

func (d *deferredValues) Enabled(level int) bool { return d.sink.Enabled(level) }

func (d *deferredValues) Info(level int, msg string, keysAndValues ...any) {
	d.withPending().Info(level, msg, keysAndValues...)
}

func (d *deferredValues) Error(err error, msg string, keysAndValues ...any) {
	d.withPending().Error(err, msg, keysAndValues...)
}

func (d *deferredValues) WithValues(keysAndValues ...any) logr.LogSink {
	return &deferredValues{sink: d.sink, pending: append(slices.Clip(d.pending), keysAndValues...)}
}

func (d *deferredValues) WithName(name string) logr.LogSink {
	return &deferredValues{sink: d.sink.WithName(name), pending: d.pending}
}

func (d *deferredValues) WithCallDepth(depth int) logr.LogSink {
	cd, ok := d.sink.(logr.CallDepthLogSink)
	if !ok {
		return d
	}
	return &deferredValues{sink: cd.WithCallDepth(depth), pending: d.pending}
}

// withPending is sink with the pending values, made once.
func (d *deferredValues) withPending() logr.LogSink {
	if len(d.pending) == 0 {
		return d.sink
	}
	d.once.Do(func() { d.resolved = d.sink.WithValues(d.pending...) })
	return d.resolved
}
