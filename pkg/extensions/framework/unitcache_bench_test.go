package framework

import (
	"encoding/json"
	"runtime"
	"testing"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
)

// benchUnit is a unit of a one-pod batch Job as koord-queue-controllers
// makes it and koord-queue admits it, as the API server serves it (the
// at-scale Jobs comparison's: its Job's labels, kwok's annotation, the
// Job controller's template labels).
const benchUnit = `{"apiVersion":"scheduling.x-k8s.io/v1alpha1","kind":"QueueUnit","metadata":{"creationTimestamp":"2026-12-07T17:32:51Z","generation":1,
"labels":{"perf.koord-queue.io/class":"large","perf.koord-queue.io/system":"koord-queue","quota.scheduling.koordinator.sh/name":"cq-0-0"},
"managedFields":[{"apiVersion":"scheduling.x-k8s.io/v1alpha1","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:podSet":{}}},"manager":"koord-queue-controllers","operation":"Update","time":"2026-12-07T17:32:51Z"}],
"name":"large-00000","namespace":"perf-cq-0-0","ownerReferences":[{"apiVersion":"batch/v1","blockOwnerDeletion":true,"controller":true,"kind":"Job","name":"large-00000","uid":"f6734944-c6df-4d81-9539-1fc14f0945fe"}],
"resourceVersion":"42250","uid":"f40eb2d1-7785-4cba-9795-4e83a8c86049"},
"spec":{"consumerRef":{"apiVersion":"batch/v1","kind":"Job","name":"large-00000","namespace":"perf-cq-0-0","uid":"f6734944-c6df-4d81-9539-1fc14f0945fe"},
"podSet":[{"count":1,"name":"main","template":{"metadata":{"annotations":{"pod-complete.stage.kwok.x-k8s.io/delay":"700ms"},
"labels":{"batch.kubernetes.io/controller-uid":"f6734944-c6df-4d81-9539-1fc14f0945fe","batch.kubernetes.io/job-name":"large-00000","controller-uid":"f6734944-c6df-4d81-9539-1fc14f0945fe","job-name":"large-00000","perf.koord-queue.io/class":"large"}},
"spec":{"containers":[{"image":"busybox","imagePullPolicy":"Always","name":"work","resources":{"requests":{"cpu":"20"}},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File"}],
"dnsPolicy":"ClusterFirst","priorityClassName":"perf-large","restartPolicy":"Never","schedulerName":"default-scheduler","securityContext":{},"terminationGracePeriodSeconds":30}}}],
"priority":200,"priorityClassName":"perf-large","queue":"cq-0-0","request":{"cpu":"20"},"resource":{"cpu":"20"}},
"status":{"admissions":[{"name":"main","replicas":1,"resources":{"cpu":"20"},"running":0}],"admissionsSummary":"main 0/1","attempts":1,
"conditions":[{"lastTransitionTime":"2026-12-07T17:32:51Z","message":"quota reserved in queue cq-0-0","observedGeneration":1,"reason":"QuotaReserved","status":"True","type":"QuotaReserved"},
{"lastTransitionTime":"2026-12-07T17:32:51Z","message":"admitted by queue cq-0-0","observedGeneration":1,"reason":"Admitted","status":"True","type":"Admitted"}],
"lastAllocateTime":"2026-12-07T17:32:51Z","lastUpdateTime":"2026-12-07T17:32:51Z","message":"admitted by queue cq-0-0","phase":"Dequeued"}}`

// BenchmarkCachedUnit reports the heap a unit holds in the extensions'
// cache once decoded and transformed (StripUnit), in bytes per unit
// (retained-B/unit): what 15,000 units cost koord-queue-controllers.
//
//	go test ./pkg/extensions/framework -run '^$' -bench CachedUnit -benchtime 10000x
func BenchmarkCachedUnit(b *testing.B) {
	kept := make([]any, 0, b.N)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for b.Loop() {
		u := &schedulingv1alpha1.QueueUnit{}
		if err := json.Unmarshal([]byte(benchUnit), u); err != nil {
			b.Fatal(err)
		}
		obj, err := StripUnit(u)
		if err != nil {
			b.Fatal(err)
		}
		kept = append(kept, obj)
	}
	b.StopTimer()
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(len(kept)), "retained-B/unit")
	runtime.KeepAlive(kept)
}
