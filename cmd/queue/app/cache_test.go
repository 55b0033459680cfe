package app

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/admission"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
	"github.com/koord-queue/koord-queue/pkg/resources"
	"github.com/koord-queue/koord-queue/pkg/testing/fakeapi"
	"github.com/koord-queue/koord-queue/pkg/testing/heap"
	"github.com/koord-queue/koord-queue/pkg/topology"
)

// jobTemplate is a pod template as a Job's unit carries it: much besides
// its requests.
func jobTemplate(containers, initContainers []corev1.Container) corev1.PodTemplateSpec {
	for _, cs := range [][]corev1.Container{containers, initContainers} {
		for i := range cs {
			cs[i].Image = "registry.example.com/team/trainer:v1.2.3"
			cs[i].Command = []string{"python", "-m", "train", "--epochs=10"}
			cs[i].Env = []corev1.EnvVar{{Name: "DATA", Value: "/data"}, {Name: "RANK", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}
			cs[i].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
			cs[i].TerminationMessagePath = corev1.TerminationMessagePathDefault
			cs[i].ImagePullPolicy = corev1.PullIfNotPresent
		}
	}
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "train"}, Annotations: map[string]string{"note": "x"}},
		Spec: corev1.PodSpec{
			Containers:     containers,
			InitContainers: initContainers,
			RestartPolicy:  corev1.RestartPolicyNever,
			NodeSelector:   map[string]string{"pool": "gpu"},
			Tolerations:    []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists}},
			Volumes:        []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			SchedulerName:  corev1.DefaultSchedulerName,
			DNSPolicy:      corev1.DNSClusterFirst,
		},
	}
}

func requests(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

// strippedUnits are units whose requests come from their pod templates in
// every way resources.PodRequests counts.
func strippedUnits() map[string]*schedulingv1alpha1.QueueUnit {
	always := corev1.ContainerRestartPolicyAlways
	unit := func(sets ...schedulingv1alpha1.PodSet) *schedulingv1alpha1.QueueUnit {
		return &schedulingv1alpha1.QueueUnit{
			ObjectMeta: metav1.ObjectMeta{
				Name: "u", Namespace: "ns", Labels: map[string]string{"quota.scheduling.koordinator.sh/name": "q"},
				Annotations: map[string]string{
					corev1.LastAppliedConfigAnnotation:     `{"a whole copy":"of the unit"}`,
					schedulingv1alpha1.AnnotationQuotaRule: "namespace name",
				},
				ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}},
			},
			Spec: schedulingv1alpha1.QueueUnitSpec{Priority: ptr.To[int32](5), PodSets: sets},
		}
	}
	stated := unit(schedulingv1alpha1.PodSet{
		Name: "main", Count: 2,
		Template: jobTemplate([]corev1.Container{{Name: "a", Resources: corev1.ResourceRequirements{Requests: requests("cpu", "1")}}}, nil),
	})
	stated.Spec.Resource, stated.Spec.Request = requests("cpu", "2"), requests("cpu", "2")
	return map[string]*schedulingv1alpha1.QueueUnit{
		"a unit stating its request, not admitted partially": stated,
		"containers with requests, and a limit standing in for a request": unit(schedulingv1alpha1.PodSet{
			Name: "main", Count: 4, MinCount: ptr.To[int32](2),
			Template: jobTemplate([]corev1.Container{
				{Name: "a", Resources: corev1.ResourceRequirements{Requests: requests("cpu", "1", "memory", "1Gi")}},
				{Name: "b", Resources: corev1.ResourceRequirements{Limits: requests("cpu", "500m", "nvidia.com/gpu", "1")}},
			}, nil),
		}),
		"init containers, a sidecar, pod-level resources and overhead": unit(
			schedulingv1alpha1.PodSet{
				Name: "driver", Count: 1,
				Template: func() corev1.PodTemplateSpec {
					t := jobTemplate(
						[]corev1.Container{{Name: "main", Resources: corev1.ResourceRequirements{Requests: requests("cpu", "2")}}},
						[]corev1.Container{
							{Name: "setup", Resources: corev1.ResourceRequirements{Requests: requests("cpu", "4", "memory", "8Gi")}},
							{Name: "proxy", RestartPolicy: &always, Resources: corev1.ResourceRequirements{Requests: requests("cpu", "250m")}},
						})
					t.Spec.Overhead = requests("cpu", "100m")
					return t
				}(),
			},
			schedulingv1alpha1.PodSet{
				Name: "workers", Count: 8, MinCount: ptr.To[int32](1),
				Template: func() corev1.PodTemplateSpec {
					t := jobTemplate([]corev1.Container{{Name: "w", Resources: corev1.ResourceRequirements{Requests: requests("cpu", "1")}}}, nil)
					t.Spec.Resources = &corev1.ResourceRequirements{Requests: requests("cpu", "3", "memory", "2Gi")}
					return t
				}(),
			}),
	}
}

// stripped is a copy of u as StripUnit leaves it.
func stripped(t *testing.T, u *schedulingv1alpha1.QueueUnit) *schedulingv1alpha1.QueueUnit {
	t.Helper()
	obj, err := StripUnit(u.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	return obj.(*schedulingv1alpha1.QueueUnit)
}

// TestStripUnitKeepsWhatKoordQueueReads: a unit stripped of its templates
// asks for the same, per pod set, whole and admitted partially, and is
// otherwise the same unit, smaller.
func TestStripUnitKeepsWhatKoordQueueReads(t *testing.T) {
	for name, orig := range strippedUnits() {
		t.Run(name, func(t *testing.T) {
			got := stripped(t, orig)

			if diff := cmp.Diff(queueunit.Request(orig), queueunit.Request(got)); diff != "" {
				t.Errorf("Request (-want +got):\n%s", diff)
			}
			for i := range orig.Spec.PodSets {
				want, have := resources.PodRequests(&orig.Spec.PodSets[i].Template.Spec), resources.PodRequests(&got.Spec.PodSets[i].Template.Spec)
				if diff := cmp.Diff(want, have); diff != "" {
					t.Errorf("pod set %s: PodRequests (-want +got):\n%s", orig.Spec.PodSets[i].Name, diff)
				}
			}
			partial := map[string]int32{}
			for _, ps := range orig.Spec.PodSets {
				if ps.MinCount != nil {
					partial[ps.Name] = *ps.MinCount
				}
			}
			if diff := cmp.Diff(queueunit.HeldWith(orig, partial), queueunit.HeldWith(got, partial)); diff != "" {
				t.Errorf("HeldWith %v (-want +got):\n%s", partial, diff)
			}
			if queueunit.MayAdmitPartially(orig) != queueunit.MayAdmitPartially(got) {
				t.Errorf("MayAdmitPartially: %v, was %v", queueunit.MayAdmitPartially(got), queueunit.MayAdmitPartially(orig))
			}

			// Nothing else changed: put back what was dropped.
			restored := got.DeepCopy()
			restored.ManagedFields = orig.ManagedFields
			restored.Annotations = orig.Annotations
			for i := range restored.Spec.PodSets {
				restored.Spec.PodSets[i].Template = orig.Spec.PodSets[i].Template
			}
			if diff := cmp.Diff(orig, restored); diff != "" {
				t.Errorf("StripUnit changed more than templates, managed fields and the last-applied annotation (-want +got):\n%s", diff)
			}
			if _, ok := got.Annotations[corev1.LastAppliedConfigAnnotation]; ok || got.ManagedFields != nil {
				t.Errorf("kept managed fields %v or the last-applied annotation", got.ManagedFields)
			}
			before, _ := json.Marshal(orig)
			after, _ := json.Marshal(got)
			if len(after) >= len(before)/2 {
				t.Errorf("stripped unit is %d bytes of JSON, was %d: want less than half", len(after), len(before))
			}
			again, _ := StripUnit(got.DeepCopy())
			if diff := cmp.Diff(got, again); diff != "" {
				t.Errorf("stripping twice differs from once (-want +got):\n%s", diff)
			}
		})
	}
	if obj, _ := StripUnit(&corev1.Pod{}); cmp.Diff(&corev1.Pod{}, obj) != "" {
		t.Errorf("StripUnit changed a Pod: %v", obj)
	}
}

// TestStripUnitKeepsTheTopologyAsk: of a template's metadata, the
// topology level its pods ask for is kept, a tenant's long value cut to
// what ParseAsk still refuses.
func TestStripUnitKeepsTheTopologyAsk(t *testing.T) {
	long := strings.Repeat("x", 100_000)
	tmpl := jobTemplate([]corev1.Container{{Name: "a", Resources: corev1.ResourceRequirements{Requests: requests("cpu", "1")}}}, nil)
	tmpl.Annotations[topology.AnnotationPodSetRequiredTopologyKueue] = "example.com/rack"
	tmpl.Annotations[topology.AnnotationPodSetPreferredTopology] = long
	u := &schedulingv1alpha1.QueueUnit{Spec: schedulingv1alpha1.QueueUnitSpec{PodSets: []schedulingv1alpha1.PodSet{{Name: "main", Count: 1, Template: tmpl}}}}
	got := stripped(t, u).Spec.PodSets[0].Template.Annotations
	want := map[string]string{topology.AnnotationPodSetRequiredTopologyKueue: "example.com/rack", topology.AnnotationPodSetPreferredTopology: long[:317]}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("template annotations (-want +got):\n%s", diff)
	}
	if _, err := topology.ParseAsk(got); err == nil {
		t.Error("the cut long value parses")
	}
}

// TestStripUnitKeepsTheNodesOfAPodSetAskingATopology: of a pod set that
// asks for a topology level, the nodes its pods can use are kept
// (topology.SelectionOf reads them); of one that asks for none they are
// dropped, as the rest of its scheduling constraints are.
func TestStripUnitKeepsTheNodesOfAPodSetAskingATopology(t *testing.T) {
	required := &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
		{Key: "example.com/gpu-model", Operator: corev1.NodeSelectorOpIn, Values: []string{"h100"}}}}}}
	selecting := func() corev1.PodTemplateSpec {
		tmpl := jobTemplate([]corev1.Container{{Name: "a", Resources: corev1.ResourceRequirements{Requests: requests("cpu", "1")}}}, nil)
		tmpl.Spec.NodeSelector = map[string]string{"example.com/pool": "train"}
		tmpl.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
		tmpl.Spec.Affinity = &corev1.Affinity{
			NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: required,
				PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 1}}},
			PodAntiAffinity: &corev1.PodAntiAffinity{},
		}
		return tmpl
	}
	asking := selecting()
	asking.Annotations[topology.AnnotationPodSetRequiredTopologyKueue] = "example.com/rack"
	u := &schedulingv1alpha1.QueueUnit{Spec: schedulingv1alpha1.QueueUnitSpec{PodSets: []schedulingv1alpha1.PodSet{
		{Name: "worker", Count: 8, Template: asking}, {Name: "launcher", Count: 1, Template: selecting()}}}}
	got := stripped(t, u).Spec.PodSets
	want := corev1.PodSpec{
		NodeSelector: map[string]string{"example.com/pool": "train"},
		Tolerations:  []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}},
		Affinity:     &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: required}},
	}
	keptOf := func(spec corev1.PodSpec) corev1.PodSpec {
		return corev1.PodSpec{NodeSelector: spec.NodeSelector, Tolerations: spec.Tolerations, Affinity: spec.Affinity}
	}
	if diff := cmp.Diff(want, keptOf(got[0].Template.Spec)); diff != "" {
		t.Errorf("the asking pod set's node selection (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(corev1.PodSpec{}, keptOf(got[1].Template.Spec)); diff != "" {
		t.Errorf("the pod set asking nothing (-want +got):\n%s", diff)
	}
}

// BenchmarkCachedUnit measures what one cached QueueUnit costs koord-queue's
// heap, decoded as the informer decodes it, as it is, stripped, and as
// cached (stripped and compacted, by one compactor for all units): the
// unit the Job extension writes for a one-pod Job (its template as the API
// server defaults it, the Job's labels) after its life (admitted, run,
// finished). It reports live bytes per unit, after a collection:
//
//	go test ./cmd/queue/app -run XXX -bench CachedUnit -benchtime 5x
func BenchmarkCachedUnit(b *testing.B) {
	tmpl := jobTemplate([]corev1.Container{{Name: "main", Resources: corev1.ResourceRequirements{Requests: requests("cpu", "1")}}}, nil)
	tmpl.Spec.TerminationGracePeriodSeconds = ptr.To[int64](30)
	tmpl.Spec.SecurityContext = &corev1.PodSecurityContext{}
	tmpl.Labels = map[string]string{
		"batch.kubernetes.io/controller-uid": "6e3c3a49-2f0e-4a57-9a47-1c1f4d8d2f11", "batch.kubernetes.io/job-name": "train",
		"controller-uid": "6e3c3a49-2f0e-4a57-9a47-1c1f4d8d2f11", "job-name": "train",
	}
	now := metav1.Now()
	u := &schedulingv1alpha1.QueueUnit{
		TypeMeta: metav1.TypeMeta{APIVersion: schedulingv1alpha1.GroupVersion.String(), Kind: "QueueUnit"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "train-job", Namespace: "team-a", UID: "0b6f7d1e-5d0e-4c5b-9a0e-3c1f2b1d9e77", ResourceVersion: "123456", Generation: 2,
			CreationTimestamp: now, Labels: map[string]string{"quota.scheduling.koordinator.sh/name": "team-a"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "train", UID: "6e3c3a49-2f0e-4a57-9a47-1c1f4d8d2f11", Controller: ptr.To(true)}},
		},
		Spec: schedulingv1alpha1.QueueUnitSpec{
			ConsumerRef: &corev1.ObjectReference{APIVersion: "batch/v1", Kind: "Job", Namespace: "team-a", Name: "train", UID: "6e3c3a49-2f0e-4a57-9a47-1c1f4d8d2f11"},
			Priority:    ptr.To[int32](100), Queue: "team-a",
			PodSets:  []schedulingv1alpha1.PodSet{{Name: "main", Count: 1, Template: tmpl}},
			Resource: requests("cpu", "1"), Request: requests("cpu", "1"),
		},
		Status: schedulingv1alpha1.QueueUnitStatus{
			Phase: schedulingv1alpha1.Succeed, Message: "finished", Attempts: 1, LastAllocateTime: &now,
			Conditions: []metav1.Condition{
				{Type: "QuotaReserved", Status: metav1.ConditionTrue, Reason: "QuotaReserved", Message: "Quota reserved in queue team-a", LastTransitionTime: now},
				{Type: "Admitted", Status: metav1.ConditionTrue, Reason: "Admitted", Message: "Admitted by queue team-a", LastTransitionTime: now},
				{Type: "Finished", Status: metav1.ConditionTrue, Reason: "Succeeded", Message: "Job finished successfully", LastTransitionTime: now},
			},
		},
	}
	data, err := json.Marshal(u)
	if err != nil {
		b.Fatal(err)
	}
	const units = 2000
	for _, tc := range []struct {
		name      string
		transform func() toolscache.TransformFunc
	}{
		{"as decoded", nil},
		{"stripped", func() toolscache.TransformFunc { return StripUnit }},
		{"as cached", func() toolscache.TransformFunc { return UnitTransform(admission.NewUnitCompactor()) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var perUnit float64
			for range b.N {
				cached := make([]*schedulingv1alpha1.QueueUnit, units)
				var transform toolscache.TransformFunc
				if tc.transform != nil {
					transform = tc.transform()
				}
				before := heap.Live()
				for i := range cached {
					c := &schedulingv1alpha1.QueueUnit{}
					if err := json.Unmarshal(data, c); err != nil {
						b.Fatal(err)
					}
					if transform != nil {
						if _, err := transform(c); err != nil {
							b.Fatal(err)
						}
					}
					cached[i] = c
				}
				perUnit += float64(heap.Live()-before) / units
				runtime.KeepAlive(cached)
			}
			b.ReportMetric(perUnit/float64(b.N), "live-bytes/unit")
		})
	}
}

// TestStripUnitKeepsANegativeAmount: a template whose containers ask for
// -8 and 10 cpu asks for 2 in total; stripped, it still shows the -8, so
// that the unit is refused for it.
func TestStripUnitKeepsANegativeAmount(t *testing.T) {
	u := &schedulingv1alpha1.QueueUnit{Spec: schedulingv1alpha1.QueueUnitSpec{PodSets: []schedulingv1alpha1.PodSet{{
		Name: "main", Count: 1,
		Template: jobTemplate([]corev1.Container{
			{Name: "a", Resources: corev1.ResourceRequirements{Requests: requests("cpu", "-8")}},
			{Name: "b", Resources: corev1.ResourceRequirements{Requests: requests("cpu", "10")}},
		}, nil),
	}}}}
	if err := queueunit.CheckAmounts(u); err == nil {
		t.Fatal("CheckAmounts accepts the unit as created")
	}
	if err := queueunit.CheckAmounts(stripped(t, u)); err == nil {
		t.Error("CheckAmounts accepts the stripped unit: its negative amount was summed away")
	}
}

// TestUnitTransformBoundsLabelsAndAnnotations: a tenant writes a job's
// labels and annotations, and its extension copies them into the unit;
// cached, a unit keeps a few KiB of them whatever it carries, and every
// one koord-queue reads: the quota it names (by either label) and the rule
// that chose it.
func TestUnitTransformBoundsLabelsAndAnnotations(t *testing.T) {
	const mib = 1 << 20
	// keptBound: what a unit's labels and annotations may keep, as
	// admission.CutMetadata counts labels (64 bytes of room each), plus
	// the annotations it reads.
	const keptBound = 5 << 10
	many := func(prefix string, valueLen, total int) map[string]string {
		out := map[string]string{}
		value := strings.Repeat("v", valueLen)
		for i, size := 0, 0; size < total; i++ {
			key := fmt.Sprintf("%s%06d", prefix, i)
			out[key] = value
			size += len(key) + len(value)
		}
		return out
	}
	quotaLabels := map[string]string{elasticquotav1alpha1.LabelQuotaName: "team-a", elasticquotav1alpha1.LabelQuotaNameAlibabaCloud: "team-b"}
	rule := map[string]string{schedulingv1alpha1.AnnotationQuotaRule: string(queueunit.QuotaByNamespaceName)}
	with := func(ms ...map[string]string) map[string]string {
		out := map[string]string{}
		for _, m := range ms {
			maps.Copy(out, m)
		}
		return out
	}
	small := map[string]string{"app": "trainer", "app.kubernetes.io/part-of": "training", "team": "a"}
	for _, tc := range []struct {
		name                  string
		labels, annotations   map[string]string
		wantLabels            map[string]string
		wantRule              string
		wantAnnotationsAtMost int
	}{{
		name:                  "1 MiB of annotations: the quota rule is kept, nothing else",
		labels:                with(quotaLabels, small),
		annotations:           with(rule, many("tenant.example.com/a", 1000, mib)),
		wantLabels:            with(quotaLabels, small),
		wantRule:              string(queueunit.QuotaByNamespaceName),
		wantAnnotationsAtMost: 1,
	}, {
		name:                  "1 MiB under the quota rule's key is no rule koord-queue reads",
		labels:                quotaLabels,
		annotations:           map[string]string{schedulingv1alpha1.AnnotationQuotaRule: strings.Repeat("x", mib)},
		wantLabels:            quotaLabels,
		wantAnnotationsAtMost: 0,
	}, {
		name:                  "1 MiB of labels: the quota's labels are kept, and the unit is marked cut",
		labels:                with(quotaLabels, many("tenant.example.com/l", 63, mib)),
		annotations:           rule,
		wantLabels:            quotaLabels,
		wantRule:              string(queueunit.QuotaByNamespaceName),
		wantAnnotationsAtMost: 2,
	}, {
		name:                  "ten thousand empty labels cost their room",
		labels:                with(quotaLabels, many("l", 0, 60_000)),
		wantLabels:            quotaLabels,
		wantAnnotationsAtMost: 1,
	}, {
		name:                  "labels within the bound are kept whole",
		labels:                with(quotaLabels, small, many("tenant.example.com/l", 20, 1000)),
		annotations:           with(rule, map[string]string{corev1.LastAppliedConfigAnnotation: "{}"}),
		wantLabels:            with(quotaLabels, small, many("tenant.example.com/l", 20, 1000)),
		wantRule:              string(queueunit.QuotaByNamespaceName),
		wantAnnotationsAtMost: 1,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			u := &schedulingv1alpha1.QueueUnit{
				ObjectMeta: metav1.ObjectMeta{Name: "u", Namespace: "ns", Labels: tc.labels, Annotations: tc.annotations},
				Spec:       schedulingv1alpha1.QueueUnitSpec{Resource: requests("cpu", "1")},
			}
			data, err := json.Marshal(u)
			if err != nil {
				t.Fatal(err)
			}
			decoded := &schedulingv1alpha1.QueueUnit{}
			if err := json.Unmarshal(data, decoded); err != nil {
				t.Fatal(err)
			}
			obj, err := UnitTransform(admission.NewUnitCompactor())(decoded)
			if err != nil {
				t.Fatal(err)
			}
			got := obj.(*schedulingv1alpha1.QueueUnit)

			kept := 0
			for _, m := range []map[string]string{got.Labels, got.Annotations} {
				for k, v := range m {
					kept += len(k) + len(v) + 64
				}
			}
			if kept > keptBound {
				t.Errorf("the cached unit keeps %d bytes of labels and annotations, want at most %d", kept, keptBound)
			}
			if n := len(got.Labels); n > len(tc.wantLabels) {
				t.Errorf("%d labels kept, want %v", n, tc.wantLabels)
			} else if diff := cmp.Diff(tc.wantLabels, got.Labels); diff != "" {
				t.Errorf("labels kept (-want +got):\n%s", diff)
			}
			if got, ok := got.Annotations[schedulingv1alpha1.AnnotationQuotaRule]; got != tc.wantRule || ok != (tc.wantRule != "") {
				t.Errorf("annotation %s: %d bytes %.40q (kept: %v), want %q", schedulingv1alpha1.AnnotationQuotaRule, len(got), got, ok, tc.wantRule)
			}
			if n := len(got.Annotations); n > tc.wantAnnotationsAtMost {
				t.Errorf("%d annotations kept, want at most %d", n, tc.wantAnnotationsAtMost)
			}
		})
	}
}

// TestUnitTransformTwiceWritesNothingShared: a streamed list transforms each
// unit twice (client-go's watch list keeps its objects in a transforming
// store, then hands them to the informer's queue, which transforms them
// again). The second pass must not write into what the first shared with
// units already cached, which readers read meanwhile: run with -race.
func TestUnitTransformTwiceWritesNothingShared(t *testing.T) {
	transform := UnitTransform(admission.NewUnitCompactor())
	units := strippedUnits()
	var cached []*schedulingv1alpha1.QueueUnit
	for _, u := range units {
		obj, err := transform(u.DeepCopy())
		if err != nil {
			t.Fatal(err)
		}
		cached = append(cached, obj.(*schedulingv1alpha1.QueueUnit))
	}
	want := make([]*schedulingv1alpha1.QueueUnit, len(cached))
	for i, u := range cached {
		want[i] = u.DeepCopy()
	}

	// Readers of the cached units, as the admission cache and the
	// visibility API read them.
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			for _, u := range cached {
				_ = u.Annotations[schedulingv1alpha1.AnnotationQuotaRule]
				for range u.Labels {
				}
				for _, ps := range u.Spec.PodSets {
					_ = resources.PodRequests(&ps.Template.Spec)
				}
			}
		}
	}()
	for range 20 {
		for _, u := range units {
			obj, err := transform(u.DeepCopy())
			if err == nil {
				_, err = transform(obj) // the second pass
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	close(stop)
	<-done
	for i := range cached {
		if diff := cmp.Diff(want[i], cached[i]); diff != "" {
			t.Errorf("a cached unit changed (-want +got):\n%s", diff)
		}
	}
}

// TestCacheReadsUnitsThroughWatchCodec: the cache's QueueUnit informer
// lists and watches through its own client (watchcodec's) and indexes
// nothing, and every other informer reads through the ListerWatcher
// controller-runtime gives it, with the indexes it asks for.
func TestCacheReadsUnitsThroughWatchCodec(t *testing.T) {
	const unit = `{"apiVersion":"scheduling.x-k8s.io/v1alpha1","kind":"QueueUnit","metadata":{"name":"a","namespace":"n","resourceVersion":"5"}}`
	url, unitRequests := fakeapi.QueueUnits(t, unit)
	opts, err := CacheOptions("", &rest.Config{Host: url})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	given := &recordingListWatch{}
	given.ListWithContextFunc = func(context.Context, metav1.ListOptions) (k8sruntime.Object, error) {
		given.calls.Add(1)
		return &schedulingv1alpha1.QueueList{}, nil
	}
	given.WatchFuncWithContext = func(context.Context, metav1.ListOptions) (watch.Interface, error) {
		given.calls.Add(1)
		return watch.NewFake(), nil
	}

	// controller-runtime asks every informer for a namespace index; the
	// units' one keeps none.
	byNamespace := toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc}
	units := opts.NewInformer(given, &schedulingv1alpha1.QueueUnit{}, 0, byNamespace)
	go units.RunWithContext(ctx)
	if !toolscache.WaitForCacheSync(ctx.Done(), units.HasSynced) {
		t.Fatal("the QueueUnit informer did not sync")
	}
	if diff := cmp.Diff([]string{"n/a"}, units.GetStore().ListKeys()); diff != "" {
		t.Errorf("QueueUnits cached (-want +got):\n%s", diff)
	}
	if n := given.calls.Load(); n != 0 || unitRequests.Load() == 0 {
		t.Errorf("QueueUnits read with %d calls of controller-runtime's ListerWatcher and %d requests of watchcodec's client, want 0 and some", n, unitRequests.Load())
	}

	if got := units.GetIndexer().GetIndexers(); len(got) != 0 {
		t.Errorf("the QueueUnit informer has indexes %v, want none", slices.Collect(maps.Keys(got)))
	}

	queues := opts.NewInformer(given, &schedulingv1alpha1.Queue{}, 0, byNamespace)
	go queues.RunWithContext(ctx)
	if !toolscache.WaitForCacheSync(ctx.Done(), queues.HasSynced) {
		t.Fatal("the Queue informer did not sync")
	}
	if given.calls.Load() == 0 {
		t.Error("Queues were not read through controller-runtime's ListerWatcher")
	}
	if _, ok := queues.GetIndexer().GetIndexers()[toolscache.NamespaceIndex]; !ok {
		t.Error("the Queue informer lost its namespace index")
	}
}

type recordingListWatch struct {
	toolscache.ListWatch
	calls atomic.Int32
}

// finishedUnits are units at the end of their lives as the extensions and
// the perf harness leave them.
func finishedUnits() map[string]*schedulingv1alpha1.QueueUnit {
	admitted := func(name string) *schedulingv1alpha1.QueueUnit {
		u := strippedUnits()["a unit stating its request, not admitted partially"]
		u.Name = name
		u.Spec.ConsumerRef = &corev1.ObjectReference{APIVersion: "batch/v1", Kind: "Job", Namespace: "ns", Name: name}
		u.Spec.MaximumExecutionTimeSeconds = ptr.To[int32](60)
		queueunit.Admit(u, "q", queueunit.Request(u), nil, nil, metav1.NewTime(time.Unix(1000, 0)))
		queueunit.FollowJob(u, queueunit.JobState{Pods: map[string]queueunit.PodCount{"main": {Running: 2, Scheduled: 2}}}, metav1.NewTime(time.Unix(1010, 0)))
		return u
	}
	succeeded := admitted("succeeded")
	queueunit.FollowJob(succeeded, queueunit.JobState{Finished: true, Succeeded: true, Pods: map[string]queueunit.PodCount{"main": {}}}, metav1.NewTime(time.Unix(1100, 0)))
	succeeded.Status.Admissions = nil // given back, as the extensions do once its pods are gone

	failed := admitted("failed-with-admissions")
	admissions := failed.Status.Admissions
	queueunit.FollowJob(failed, queueunit.JobState{Finished: true, Message: "BackoffLimitExceeded"}, metav1.NewTime(time.Unix(1200, 0)))
	failed.Status.RequeueState = &schedulingv1alpha1.RequeueState{Count: 2}
	// Resized since its admission: charged what its admissions hold.
	failed.Spec.PodSets[0].Count = 3
	failed.Spec.Resource, failed.Spec.Request = requests("cpu", "3"), requests("cpu", "3")
	failed.Status.Admissions = admissions // as a writer other than the extensions may leave them
	failed.Status.AdmissionChecks = []schedulingv1alpha1.AdmissionCheckState{{Name: "prov", State: schedulingv1alpha1.CheckStateReady}}

	harness := admitted("as-the-harness-leaves-it")
	harness.Status.Phase = schedulingv1alpha1.Succeed
	harness.Status.Admissions = nil
	harness.Status.Message = "finished (performance runner)"
	return map[string]*schedulingv1alpha1.QueueUnit{"succeeded": succeeded, "failed, admissions listed": failed, "harness": harness}
}

// TestStripUnitKeepsOfAFinishedUnitWhatKoordQueueReads: a finished unit's
// status keeps what koord-queue decides on and learns from, and nothing
// else; the rest of the unit is stripped as any unit is.
func TestStripUnitKeepsOfAFinishedUnitWhatKoordQueueReads(t *testing.T) {
	for name, orig := range finishedUnits() {
		t.Run(name, func(t *testing.T) {
			got := stripped(t, orig)
			type reads struct {
				Phase                          schedulingv1alpha1.QueueUnitPhase
				Finished, HoldsQuota, Deadline bool
				Attempts                       int64
				Charged                        corev1.ResourceList
				Ran                            time.Duration // what the forecast learns
			}
			readOf := func(u *schedulingv1alpha1.QueueUnit) reads {
				_, deadline := queueunit.ExecutionDeadline(u)
				return reads{
					Phase: u.EffectivePhase(), Finished: queueunit.Finished(u.EffectivePhase()), HoldsQuota: queueunit.HoldsQuota(u),
					Deadline: deadline, Attempts: u.Status.Attempts, Charged: queueunit.Charged(u),
					Ran: u.Status.LastUpdateTime.Sub(u.Status.LastAllocateTime.Time),
				}
			}
			if diff := cmp.Diff(readOf(orig), readOf(got)); diff != "" {
				t.Errorf("what koord-queue reads (-want +got):\n%s", diff)
			}
			if readOf(got).Ran <= 0 {
				t.Errorf("the unit ran %v: the test's unit has no run time to keep", readOf(got).Ran)
			}
			st := got.Status
			if len(st.Conditions) > 0 || st.Message != "" || st.PodState != (schedulingv1alpha1.PodState{}) || st.AdmissionsSummary != "" ||
				st.RequeueState != nil || len(st.AdmissionChecks) > 0 {
				t.Errorf("kept of the finished unit's status more than koord-queue reads: %+v", st)
			}
			running := orig.DeepCopy()
			running.Status.Phase = schedulingv1alpha1.Running
			want := stripped(t, running)
			want.Status = got.Status
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("stripping a finished unit changed more than its status (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(got, stripped(t, got)); diff != "" {
				t.Errorf("stripping twice differs from once (-want +got):\n%s", diff)
			}
		})
	}
}
