// Package api tests koord-queue's CRDs against a real kube-apiserver: what it
// accepts, what it rejects and with which message.
package api

import (
	"os"
	"testing"

	"github.com/koord-queue/koord-queue/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, func(e *testenv.Env) { env = e }))
}
