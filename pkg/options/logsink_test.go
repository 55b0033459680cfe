package options

import (
	"bytes"
	"errors"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/zapr"
	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// logScript logs through l as the binaries' loggers are used: names and
// values added in turn, lines at enabled and disabled levels, errors, a
// helper's call depth. Both loggers compared run the same lines, so that
// their callers are the same.
func logScript(l logr.Logger) {
	l = l.WithName("controller").WithValues("controller", "job", "reconcileID", "1f3c")
	named := l.WithValues("Job", map[string]string{"name": "train", "namespace": "team"}).WithName("job")
	named.V(3).Info("not logged at level 0", "conflict", true)
	named.Info("Created QueueUnit", "queueUnit", "team/train", "jobRunning", false)
	named.Info("Again, from the values encoded once")
	l.Error(errors.New("conflict"), "Reconciler error", "attempt", 2)
	func(h logr.Logger) { h.WithCallDepth(1).Info("from a helper") }(named)
	l.WithValues().Info("no values added")
}

// TestDeferredValuesLogWhatZapLogs: the values WithValues gives come out
// where and as zap's With puts them, with the same caller and stack
// traces, and nothing is written for a disabled level.
func TestDeferredValuesLogWhatZapLogs(t *testing.T) {
	logWith := func(wrap bool) string {
		var buf bytes.Buffer
		enc := zap.NewDevelopmentEncoderConfig()
		enc.TimeKey = ""
		core := zapcore.NewCore(zapcore.NewJSONEncoder(enc), zapcore.AddSync(&buf), zapcore.InfoLevel)
		l := zapr.NewLogger(zap.New(core, zap.AddCaller(), zap.AddStacktrace(zapcore.ErrorLevel)))
		if wrap {
			l = logr.New(deferValues(l.GetSink()))
		}
		logScript(l)
		return buf.String()
	}
	want, got := logWith(false), logWith(true)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("lines logged (-zap's With +deferred):\n%s", diff)
	}
	if !bytes.Contains([]byte(want), []byte(`"reconcileID":"1f3c"`)) {
		t.Errorf("the script logged no values:\n%s", want)
	}
}

// BenchmarkReconcileLogger is what each reconcile's logger costs when it
// logs nothing, as controller-runtime makes it: the reconciler's object
// and a reconcileID.
func BenchmarkReconcileLogger(b *testing.B) {
	base := zapr.NewLogger(zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(&bytes.Buffer{}), zapcore.InfoLevel)))
	for name, l := range map[string]logr.Logger{"zap": base, "deferred": logr.New(deferValues(base.GetSink()))} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				log := l.WithValues("controller", "job", "Job", map[string]string{"name": "train", "namespace": "team"}, "namespace", "team", "name", "train")
				log = log.WithValues("reconcileID", "0b9c1a55-7c4e-4f6e-9d5b-3f1e2a7c8d90")
				log.V(2).Info("Created QueueUnit")
			}
		})
	}
}
