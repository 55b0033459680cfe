package e2e

import (
	"context"
	"os"
	"sync"
	"testing"
)

// skipOperatorsEnv set to 1 skips the tests that run a framework's operator.
const skipOperatorsEnv = "KOORD_QUEUE_E2E_SKIP_OPERATORS"

// operator is a framework's operator on the local cluster, started once, by
// the first test that needs it.
type operator struct {
	once sync.Once
	err  error
}

// need starts the operator (named what) for namespace, which it creates,
// with start the first time a test needs it, and fails the test if it
// cannot (a binary not built says to run `make tools`). It skips the test
// only when KOORD_QUEUE_E2E_SKIP_OPERATORS=1.
func (o *operator) need(t *testing.T, what, namespace string, start func(context.Context) error) {
	t.Helper()
	if os.Getenv(skipOperatorsEnv) == "1" {
		t.Skipf("%s=1: the tests that run a framework's operator are skipped", skipOperatorsEnv)
	}
	o.once.Do(func() {
		ctx := context.Background()
		if err := k8sClient.Create(ctx, namespaceObj(namespace)); err != nil && !isAlreadyExists(err) {
			o.err = err
			return
		}
		o.err = start(ctx)
	})
	if o.err != nil {
		t.Fatalf("starting %s (%s=1 skips the tests that need it): %v", what, skipOperatorsEnv, o.err)
	}
}
