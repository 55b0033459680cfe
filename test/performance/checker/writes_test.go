package checker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCountWritesBreaksDownByWhatWasWritten: each write is told by its
// client, verb, resource and answer, and by what its body wrote: an
// Event's reason (a later patch of it by the reason it was created with),
// a QueueUnit status write's admission, eviction or wait message.
func TestCountWritesBreaksDownByWhatWasWritten(t *testing.T) {
	lines := []string{
		`{"stage":"ResponseComplete","verb":"patch","userAgent":"koord-queue","objectRef":{"resource":"queueunits","namespace":"ns","name":"a","subresource":"status"},"responseStatus":{"code":200},"requestObject":{"metadata":{"resourceVersion":"5"},"status":{"admissions":[{"name":"main","replicas":1}],"phase":"Dequeued","message":"admitted by queue q"}}}`,
		`{"stage":"ResponseComplete","verb":"patch","userAgent":"koord-queue/v0.1.0 (linux/amd64) kubernetes/$Format","objectRef":{"resource":"queueunits","namespace":"ns","name":"b","subresource":"status"},"responseStatus":{"code":200},"requestObject":{"status":{"admissions":[{"name":"main","replicas":1}],"phase":"Dequeued"}}}`,
		`{"stage":"ResponseComplete","verb":"patch","userAgent":"koord-queue","objectRef":{"resource":"queueunits","namespace":"ns","name":"c","subresource":"status"},"responseStatus":{"code":200},"requestObject":{"status":{"message":"waiting in queue q at position 2 of 3","phase":"Enqueued"}}}`,
		`{"stage":"ResponseComplete","verb":"patch","userAgent":"koord-queue","objectRef":{"resource":"queueunits","namespace":"ns","name":"c","subresource":"status"},"responseStatus":{"code":409},"requestObject":{"status":{"message":"waiting in queue q at position 1 of 3"}}}`,
		`{"stage":"ResponseComplete","verb":"patch","userAgent":"koord-queue","objectRef":{"resource":"queueunits","namespace":"ns","name":"a","subresource":"status"},"responseStatus":{"code":200},"requestObject":{"status":{"phase":"Enqueued","message":"preempted","conditions":[{"type":"Evicted","status":"True"},{"type":"Admitted","status":"False"}]}}}`,
		`{"stage":"ResponseComplete","verb":"patch","userAgent":"koord-queue","objectRef":{"resource":"queueunits","namespace":"ns","name":"a"},"responseStatus":{"code":200},"requestObject":{"spec":{"queue":"q"}}}`,
		`{"stage":"ResponseComplete","verb":"create","userAgent":"koord-queue","objectRef":{"resource":"events","namespace":"ns"},"responseStatus":{"code":201},"requestObject":{"metadata":{"name":"a.1","namespace":"ns"},"reason":"Preempted"}}`,
		`{"stage":"ResponseComplete","verb":"patch","userAgent":"koord-queue","objectRef":{"resource":"events","namespace":"ns","name":"a.1"},"responseStatus":{"code":200},"requestObject":{"count":2}}`,
		`{"stage":"ResponseComplete","verb":"patch","userAgent":"koord-queue","objectRef":{"resource":"queues","namespace":"koord-queue","name":"q","apiGroup":"scheduling.x-k8s.io","subresource":"status"},"responseStatus":{"code":200}}`,
		`{"stage":"ResponseComplete","verb":"patch","userAgent":"perf-runner","objectRef":{"resource":"queueunits","namespace":"ns","name":"b","subresource":"status"},"responseStatus":{"code":200},"requestObject":{"status":{"phase":"Succeed"}}}`,
		`{"stage":"Panic","verb":"create","userAgent":"koord-queue","objectRef":{"resource":"events"},"responseStatus":{"code":500}}`,
		`{"stage":"ResponseComplete","verb":"create","userAgent":"koord-queue-controllers","objectRef":{"resource":"events","namespace":"ns"},"responseStatus":{"code":201}}`,
	}
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := CountWrites(path, KoordQueueAgent, 4)
	if err != nil {
		t.Fatal(err)
	}
	want := &Writes{
		Agent: KoordQueueAgent, Admissions: 4, Controller: 9, PerAdmission: 2.25,
		Kinds: []WriteKind{
			{User: "koord-queue", Verb: "patch", Resource: "queueunits/status", Code: 200, What: WriteAdmission, Count: 2},
			{User: "koord-queue", Verb: "create", Resource: "events", Code: 201, What: "Preempted", Count: 1},
			{User: "koord-queue", Verb: "patch", Resource: "events", Code: 200, What: "Preempted", Count: 1},
			{User: "koord-queue", Verb: "patch", Resource: "queues/status", Code: 200, Count: 1},
			{User: "koord-queue", Verb: "patch", Resource: "queueunits", Code: 200, What: WriteQueueName, Count: 1},
			{User: "koord-queue", Verb: "patch", Resource: "queueunits/status", Code: 200, What: WriteEviction, Count: 1},
			{User: "koord-queue", Verb: "patch", Resource: "queueunits/status", Code: 200, What: WriteWaitMessage, Count: 1},
			{User: "koord-queue", Verb: "patch", Resource: "queueunits/status", Code: 409, What: WriteWaitMessage, Count: 1},
			{User: "koord-queue-controllers", Verb: "create", Resource: "events", Code: 201, Count: 1},
			{User: "perf-runner", Verb: "patch", Resource: "queueunits/status", Code: 200, What: WriteFinished, Count: 1},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("CountWrites (-want +got):\n%s", diff)
	}
	text := got.Text()
	for _, line := range []string{
		"koord-queue's API writes: 9, 2.250 per admission (4 admissions and evictions)",
		"      2  0.500  patch queueunits/status 200 (admission)",
		"other clients' writes: koord-queue-controllers create events 1, perf-runner patch queueunits/status 1",
	} {
		if !strings.Contains(text, line) {
			t.Errorf("Text lacks %q:\n%s", line, text)
		}
	}
}
