// Package frameworktest checks what a framework adapter says about a job,
// so that each adapter's table test states only its cases.
package frameworktest

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
)

// Want is what a job should say of itself.
type Want struct {
	Suspended bool
	// PodSets are compared by name, count and MadeUp (not by their
	// templates, nor what an operator adds to them).
	PodSets   []framework.PodSet
	Finished  bool
	Succeeded bool
	// Message is checked only when not empty.
	Message string
	Pods    map[string]framework.PodCount
}

// Check compares what job says with want, reporting each difference as
// (-want +got).
func Check(t *testing.T, job framework.GenericJob, want Want) {
	t.Helper()
	if got := job.IsSuspended(); got != want.Suspended {
		t.Errorf("IsSuspended = %v, want %v", got, want.Suspended)
	}
	sets, err := job.PodSets()
	if err != nil {
		t.Fatalf("PodSets: %v", err)
	}
	if diff := cmp.Diff(want.PodSets, sets, cmpopts.IgnoreFields(framework.PodSet{}, "Template", "Added")); diff != "" {
		t.Errorf("PodSets (-want +got):\n%s", diff)
	}
	msg, ok, finished := job.Finished()
	if finished != want.Finished || ok != want.Succeeded {
		t.Errorf("Finished = (succeeded %v, finished %v), want (%v, %v)", ok, finished, want.Succeeded, want.Finished)
	}
	if want.Message != "" && msg != want.Message {
		t.Errorf("Finished message = %q, want %q", msg, want.Message)
	}
	if diff := cmp.Diff(want.Pods, job.Pods(), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("Pods (-want +got):\n%s", diff)
	}
}
