package frameworktest

import (
	"encoding/json"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
)

// SubmittedRunning is a copy of obj, a job of integ, released the way a user
// who forgot to suspend it submits it.
func SubmittedRunning(t testing.TB, integ framework.Integration, obj client.Object) framework.GenericJob {
	t.Helper()
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatalf("encoding %s %s: %v", integ.GVK.Kind, obj.GetName(), err)
	}
	job := integ.NewJob()
	if err := json.Unmarshal(data, job.Object()); err != nil {
		t.Fatalf("decoding %s %s: %v", integ.GVK.Kind, obj.GetName(), err)
	}
	job.Resume()
	return job
}
