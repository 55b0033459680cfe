package framework

import (
	"fmt"
	"maps"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/extensionstest"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
	qt "github.com/koord-queue/koord-queue/pkg/quota/quotatest"
	"github.com/koord-queue/koord-queue/pkg/resources"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
)

func podSets(counts ...int32) []PodSet {
	var out []PodSet
	for i, n := range counts {
		t := wrappers.PodTemplate("cpu", "1")
		out = append(out, PodSet{Name: fmt.Sprintf("set-%d", i), Template: &t, Count: n})
	}
	return out
}

// askingKinds is two pod sets asking n kinds of resources in all, some in both.
func askingKinds(n int) []PodSet {
	var a, b []string
	for i := range n {
		pair := []string{fmt.Sprintf("example.com/r%02d", i), "1"}
		a = append(a, pair...)
		if i%2 == 0 {
			b = append(b, pair...)
		}
	}
	ta, tb := wrappers.PodTemplate(a...), wrappers.PodTemplate(b...)
	return []PodSet{{Name: "a", Template: &ta, Count: 1}, {Name: "b", Template: &tb, Count: 2}}
}

func TestUnitPodSets(t *testing.T) {
	cases := map[string]struct {
		sets    []PodSet
		wantErr string
	}{
		"one to eight sets are fine": {sets: podSets(1, 2, 3, 4, 5, 6, 7, 8)},
		"no pod set":                 {wantErr: "the job has no pods"},
		"more than eight sets": {
			sets:    podSets(1, 1, 1, 1, 1, 1, 1, 1, 1),
			wantErr: "the job has 9 groups of pods; a queue unit holds at most 8",
		},
		"sixteen kinds of resources are fine": {sets: askingKinds(16)},
		"more than sixteen kinds of resources": {
			sets:    askingKinds(17),
			wantErr: "the job asks for 17 kinds of resources; a queue unit holds at most 16",
		},
		"a name that is not a DNS label": {
			sets:    []PodSet{{Name: "Small_Workers", Count: 1}},
			wantErr: `pod set name "Small_Workers": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
		},
		"two sets of one name": {
			sets:    []PodSet{{Name: "a", Count: 1}, {Name: "a", Count: 1}},
			wantErr: `two pod sets are named "a"`,
		},
		"a minimum count from 1 to the count": {
			sets: []PodSet{{Name: "a", Count: 4, MinCount: ptr.To[int32](1)}, {Name: "b", Count: 4, MinCount: ptr.To[int32](4)}},
		},
		"a minimum count above the count": {
			sets:    []PodSet{{Name: "a", Count: 4, MinCount: ptr.To[int32](5)}},
			wantErr: `pod set "a" can start with at least 5 of its 4 pods: that must be from 1 to 4`,
		},
		"a minimum count of zero": {
			sets:    []PodSet{{Name: "a", Count: 4, MinCount: ptr.To[int32](0)}},
			wantErr: `pod set "a" can start with at least 0 of its 4 pods: that must be from 1 to 4`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := unitPodSets(tc.sets, podCreation{})
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if gotErr != tc.wantErr {
				t.Fatalf("error = %q, want %q", gotErr, tc.wantErr)
			}
			if err == nil && len(got) != len(tc.sets) {
				t.Errorf("got %d pod sets, want %d", len(got), len(tc.sets))
			}
		})
	}
}

// TestUnitPodSetsCarryWhatTheOperatorAdds: a unit's template has the
// containers the operator adds to the pods, so the unit asks for what the
// pods will (init containers by their largest); the job's template keeps
// only its own.
func TestUnitPodSetsCarryWhatTheOperatorAdds(t *testing.T) {
	job := wrappers.PodTemplate("cpu", "100m", "memory", "128Mi")
	added := AddedContainers{
		Containers:     []corev1.Container{{Name: "sidecar", Resources: corev1.ResourceRequirements{Requests: qt.Res("cpu", "500m", "memory", "512Mi")}}},
		InitContainers: []corev1.Container{{Name: "wait", Resources: corev1.ResourceRequirements{Requests: qt.Res("cpu", "1", "memory", "256Mi")}}},
	}
	got, err := unitPodSets([]PodSet{{Name: "main", Template: &job, Count: 2, Added: added}}, podCreation{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(qt.Res("cpu", "2", "memory", "1280Mi"), resources.PodSetsRequests(got)); diff != "" {
		t.Errorf("the unit's request (-want +got):\n%s", diff)
	}
	if len(job.Spec.Containers) != 1 || len(job.Spec.InitContainers) != 0 {
		t.Errorf("the job's template changed: %+v", job.Spec)
	}
}

func TestNewQueueUnit(t *testing.T) {
	integ := Integration{Name: "job", GVK: metav1.SchemeGroupVersion.WithKind("Fake"), UnitSuffix: "-fake-qu"}
	job := extensionstest.MakeJob("train", "ns").Quota("team-a").Parallelism(3).Request("cpu", "500m", "memory", "1Gi").Obj()
	job.UID = "uid-1"
	job.Annotations = map[string]string{"note": "x", corev1.LastAppliedConfigAnnotation: "{}"}
	sets, err := unitPodSets([]PodSet{{Name: "main", Template: &job.Spec.Template, Count: 3}}, podCreation{})
	if err != nil {
		t.Fatal(err)
	}
	got := newQueueUnit(integ, job, sets, "high", ptr.To[int32](100), "", "")
	want := &schedulingv1alpha1.QueueUnit{
		ObjectMeta: metav1.ObjectMeta{
			Name: "train-fake-qu", Namespace: "ns",
			Labels:      map[string]string{elasticquotav1alpha1.LabelQuotaName: "team-a"},
			Annotations: map[string]string{"note": "x"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "meta.k8s.io/v1", Kind: "Fake", Name: "train", UID: "uid-1",
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: schedulingv1alpha1.QueueUnitSpec{
			ConsumerRef:       &corev1.ObjectReference{APIVersion: "meta.k8s.io/v1", Kind: "Fake", Namespace: "ns", Name: "train", UID: "uid-1"},
			Queue:             "team-a",
			Priority:          ptr.To[int32](100),
			PriorityClassName: "high",
			PodSets:           sets,
			Resource:          qt.Res("cpu", "1500m", "memory", "3Gi"),
			Request:           qt.Res("cpu", "1500m", "memory", "3Gi"),
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("unit (-want +got):\n%s", diff)
	}

	t.Run("a namespace's quota labels the unit", func(t *testing.T) {
		plain := extensionstest.MakeJob("plain", "ns").Obj()
		got := newQueueUnit(integ, plain, sets, "", nil, "team-b", queueunit.QuotaByNamespacesAnnotation)
		if q := got.Labels[elasticquotav1alpha1.LabelQuotaName]; q != "team-b" {
			t.Errorf("quota label = %q, want team-b", q)
		}
		if r := got.Annotations[schedulingv1alpha1.AnnotationQuotaRule]; r != string(queueunit.QuotaByNamespacesAnnotation) {
			t.Errorf("quota rule annotation = %q, want %q", r, queueunit.QuotaByNamespacesAnnotation)
		}
		if got.Spec.Queue != "team-b" {
			t.Errorf("spec.queue = %q, want team-b", got.Spec.Queue)
		}
	})
}

func TestResizeUnit(t *testing.T) {
	cases := map[string]struct {
		unit        *schedulingv1alpha1.QueueUnit
		sets        []schedulingv1alpha1.PodSet
		wantChanged bool
		wantRequest corev1.ResourceList
	}{
		"a job that did not change leaves its unit alone": {
			unit: wrappers.MakeQueueUnit("u", "ns").PodSet("main", 2, "cpu", "1").Obj(),
			sets: wrappers.MakeQueueUnit("u", "ns").PodSet("main", 2, "cpu", "1").Obj().Spec.PodSets,
		},
		"more pods resize the unit": {
			unit:        wrappers.MakeQueueUnit("u", "ns").PodSet("main", 2, "cpu", "1").Obj(),
			sets:        wrappers.MakeQueueUnit("u", "ns").PodSet("main", 3, "cpu", "1").Obj().Spec.PodSets,
			wantChanged: true,
			wantRequest: qt.Res("cpu", "3"),
		},
		"a new minimum count updates the unit": {
			unit:        wrappers.MakeQueueUnit("u", "ns").PodSet("main", 2, "cpu", "1").Obj(),
			sets:        wrappers.MakeQueueUnit("u", "ns").PodSet("main", 2, "cpu", "1").MinCount(1).Obj().Spec.PodSets,
			wantChanged: true,
			wantRequest: qt.Res("cpu", "2"),
		},
		"a bigger request resizes the unit": {
			unit:        wrappers.MakeQueueUnit("u", "ns").PodSet("main", 2, "cpu", "1").Obj(),
			sets:        wrappers.MakeQueueUnit("u", "ns").PodSet("main", 2, "cpu", "2").Obj().Spec.PodSets,
			wantChanged: true,
			wantRequest: qt.Res("cpu", "4"),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if changed := resizeUnit(tc.unit, tc.sets); changed != tc.wantChanged {
				t.Fatalf("changed = %v, want %v", changed, tc.wantChanged)
			}
			if !tc.wantChanged {
				return
			}
			if diff := cmp.Diff(tc.wantRequest, tc.unit.Spec.Request); diff != "" {
				t.Errorf("request (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("a fixed job lifts the hold", func(t *testing.T) {
		u := wrappers.MakeQueueUnit("u", "ns").Obj()
		holdInvalid(u, "bad annotation")
		if !isHeldInvalid(u) || u.IsActive() {
			t.Fatalf("holdInvalid left the unit active or unmarked: %+v", u)
		}
		if !resizeUnit(u, wrappers.MakeQueueUnit("u", "ns").PodSet("main", 1, "cpu", "1").Obj().Spec.PodSets) {
			t.Fatal("resizeUnit changed nothing")
		}
		if isHeldInvalid(u) || !u.IsActive() {
			t.Errorf("the unit is still held: annotations %v, active %v", u.Annotations, u.Spec.Active)
		}
	})
}

func TestGrew(t *testing.T) {
	unit := wrappers.MakeQueueUnit("u", "ns").PodSet("head", 1).PodSet("workers", 4).Obj().Spec.PodSets
	cases := map[string]struct {
		job  []schedulingv1alpha1.PodSet
		want bool
	}{
		"the same":        {job: unit},
		"fewer pods":      {job: wrappers.MakeQueueUnit("u", "ns").PodSet("head", 1).PodSet("workers", 2).Obj().Spec.PodSets},
		"more pods":       {job: wrappers.MakeQueueUnit("u", "ns").PodSet("head", 1).PodSet("workers", 5).Obj().Spec.PodSets, want: true},
		"a new pod set":   {job: wrappers.MakeQueueUnit("u", "ns").PodSet("head", 1).PodSet("gpu", 1).Obj().Spec.PodSets, want: true},
		"a pod set fewer": {job: wrappers.MakeQueueUnit("u", "ns").PodSet("head", 1).Obj().Spec.PodSets},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := grew(unit, tc.job); got != tc.want {
				t.Errorf("grew = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestExcess: a job is measured against what its unit was admitted with,
// per pod set: its admissions' replicas (not its unit's spec, which may have
// been resized since), and its unit's per-pod request; it is told how it
// exceeds them.
func TestExcess(t *testing.T) {
	admittedAt := func(spec, admitted int32) *schedulingv1alpha1.QueueUnit {
		u := wrappers.MakeQueueUnit("u", "ns").PodSet("main", spec, "cpu", "1").MinCount(1).Obj()
		u.Status.Admissions = []schedulingv1alpha1.Admission{{Name: "main", Replicas: int64(admitted)}}
		return u
	}
	job := func(n int32, requests ...string) []schedulingv1alpha1.PodSet {
		if len(requests) == 0 {
			requests = []string{"cpu", "1"}
		}
		return wrappers.MakeQueueUnit("u", "ns").PodSet("main", n, requests...).Obj().Spec.PodSets
	}
	adopted := func(u *schedulingv1alpha1.QueueUnit, sets []schedulingv1alpha1.PodSet) *schedulingv1alpha1.QueueUnit {
		recordAdoptedPodRequests(u, sets)
		return u
	}
	cases := map[string]struct {
		unit    *schedulingv1alpha1.QueueUnit
		job     []schedulingv1alpha1.PodSet
		partial map[string]int32
		want    []string
	}{
		"as admitted":                           {unit: admittedAt(2, 2), job: job(2)},
		"shrunk":                                {unit: admittedAt(2, 2), job: job(1, "cpu", "500m")},
		"resized to 6 after its admission at 2": {unit: admittedAt(6, 2), job: job(6), want: []string{"pod set main: 6 pods, admitted 2"}},
		"admitted partially, run with the pods admitted": {unit: admittedAt(6, 2), job: job(6), partial: map[string]int32{"main": 2}},
		"admitted partially, asking more than its unit":  {unit: admittedAt(6, 2), job: job(7), partial: map[string]int32{"main": 2}, want: []string{"pod set main: 7 pods, admitted 2"}},
		"no admissions written: its spec":                {unit: wrappers.MakeQueueUnit("u", "ns").PodSet("main", 6, "cpu", "1").Obj(), job: job(6)},
		"no admissions written, more pods than its spec": {unit: wrappers.MakeQueueUnit("u", "ns").PodSet("main", 6, "cpu", "1").Obj(), job: job(7), want: []string{"pod set main: 7 pods, admitted 6"}},
		"a pod set it was not admitted with": {unit: admittedAt(2, 2),
			job:  wrappers.MakeQueueUnit("u", "ns").PodSet("main", 2, "cpu", "1").PodSet("extra", 1).Obj().Spec.PodSets,
			want: []string{"pod set extra: not admitted"}},
		"more cpu per pod":                    {unit: admittedAt(2, 2), job: job(2, "cpu", "7"), want: []string{"pod set main: cpu per pod 1 -> 7"}},
		"a resource it was not admitted with": {unit: admittedAt(2, 2), job: job(2, "cpu", "1", "nvidia.com/gpu", "1"), want: []string{"pod set main: nvidia.com/gpu per pod 0 -> 1"}},
		"more pods, each asking more": {unit: admittedAt(2, 2), job: job(3, "cpu", "2", "memory", "1Gi"),
			want: []string{"pod set main: 3 pods, admitted 2, cpu per pod 1 -> 2, memory per pod 0 -> 1Gi"}},
		"less of one resource cannot pay for more of another": {unit: wrappers.MakeQueueUnit("u", "ns").PodSet("main", 1, "cpu", "4", "memory", "1Gi").Obj(),
			job: job(1, "cpu", "1", "memory", "2Gi"), want: []string{"pod set main: memory per pod 1Gi -> 2Gi"}},
		"adopted: what the job asked when taken over": {unit: adopted(admittedAt(2, 2), job(2, "cpu", "1200m")), job: job(2, "cpu", "1200m")},
		"adopted, grown since": {unit: adopted(admittedAt(2, 2), job(2, "cpu", "1200m")), job: job(2, "cpu", "7"),
			want: []string{"pod set main: cpu per pod 1200m -> 7"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, excess(tc.unit, tc.job, tc.partial)); diff != "" {
				t.Errorf("excess (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStripUnitKeepsPodSetRequests: a unit copies its job's pod templates;
// cached, each keeps what its per-pod request is made of (containers' and
// init containers' resources, sidecars included, overhead, pod-level
// resources), so the extensions compare and judge it as they would the
// whole unit, and nothing else.
func TestStripUnitKeepsPodSetRequests(t *testing.T) {
	sidecar := corev1.ContainerRestartPolicyAlways
	template := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "train"}, Annotations: map[string]string{"note": strings.Repeat("x", 1<<10)}},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{
				{Name: "setup", Image: "setup:1", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}}},
				{Name: "proxy", Image: "proxy:1", RestartPolicy: &sidecar, Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}},
			},
			Containers: []corev1.Container{
				{Name: "work", Image: "trainer:1", Command: []string{"python", "train.py"}, Env: []corev1.EnvVar{{Name: "EPOCHS", Value: "9"}},
					Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("2")}}},
			},
			Overhead:     corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")},
			NodeSelector: map[string]string{"pool": "gpu"},
			Tolerations:  []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists}},
		},
	}
	whole := &schedulingv1alpha1.QueueUnit{ObjectMeta: metav1.ObjectMeta{Name: "u", Namespace: "ns"},
		Spec: schedulingv1alpha1.QueueUnitSpec{PodSets: []schedulingv1alpha1.PodSet{
			{Name: "main", Count: 4, MinCount: ptr.To[int32](2), Template: template},
			{Name: "empty", Count: 1},
		}}}
	obj, err := StripUnit(whole.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	got := obj.(*schedulingv1alpha1.QueueUnit)
	if !samePodSets(whole.Spec.PodSets, got.Spec.PodSets) {
		t.Errorf("stripped pod sets ask for something else: %+v", got.Spec.PodSets)
	}
	for i, s := range got.Spec.PodSets {
		want := whole.Spec.PodSets[i]
		if diff := cmp.Diff(resources.PodRequests(&want.Template.Spec), resources.PodRequests(&s.Template.Spec)); diff != "" {
			t.Errorf("pod set %s's request (-whole +stripped):\n%s", s.Name, diff)
		}
		if s.Name != want.Name || s.Count != want.Count || !ptr.Equal(s.MinCount, want.MinCount) {
			t.Errorf("pod set %d is %s × %d (min %v), want %s × %d (min %v)", i, s.Name, s.Count, s.MinCount, want.Name, want.Count, want.MinCount)
		}
	}
	kept := got.Spec.PodSets[0].Template
	if kept.Labels != nil || kept.Annotations != nil || kept.Spec.NodeSelector != nil || kept.Spec.Tolerations != nil ||
		kept.Spec.Containers[0].Image != "" || kept.Spec.Containers[0].Command != nil || kept.Spec.Containers[0].Env != nil {
		t.Errorf("stripped template keeps more than its request: %+v", kept)
	}
	again, err := StripUnit(got.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(got, again.(*schedulingv1alpha1.QueueUnit)); diff != "" {
		t.Errorf("stripping again changed the unit (-once +twice):\n%s", diff)
	}
}

// TestStripUnitKeepsWhatTheExtensionsRead: a unit copies its job's
// labels and annotations, a MiB of them if the tenant wrote so; cached, it
// keeps only those the extensions read, and a unit that has no others
// keeps its maps as they are (a streamed list strips each unit twice).
func TestStripUnitKeepsWhatTheExtensionsRead(t *testing.T) {
	read := map[string]string{
		elasticquotav1alpha1.LabelQuotaName:             "team-a",
		elasticquotav1alpha1.LabelQuotaNameAlibabaCloud: "team-b",
		schedulingv1alpha1.LabelMaxExecTimeSeconds:      "600",
		schedulingv1alpha1.LabelMaxExecTimeSecondsKueue: "900",
	}
	readAnnotations := map[string]string{
		schedulingv1alpha1.AnnotationInvalidJob:      "negative cpu",
		schedulingv1alpha1.AnnotationPodSetOriginals: `{"main":{}}`,
		annotationAdoptedPodRequests:                 `{"main":{"cpu":"1"}}`,
	}
	u := &schedulingv1alpha1.QueueUnit{ObjectMeta: metav1.ObjectMeta{
		Name: "u", Namespace: "ns", Labels: maps.Clone(read), Annotations: maps.Clone(readAnnotations),
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "koord-queue-controllers"}},
	}}
	for i := range 1 << 10 {
		u.Labels[fmt.Sprintf("tenant.example.com/l%04d", i)] = strings.Repeat("v", 63)
		u.Annotations[fmt.Sprintf("tenant.example.com/a%04d", i)] = strings.Repeat("v", 1<<10)
	}
	obj, err := StripUnit(u)
	if err != nil {
		t.Fatal(err)
	}
	got := obj.(*schedulingv1alpha1.QueueUnit)
	if n := len(got.Labels); n > len(read) {
		t.Errorf("%d labels kept, want %d", n, len(read))
	} else if diff := cmp.Diff(read, got.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if n := len(got.Annotations); n > len(readAnnotations) {
		t.Errorf("%d annotations kept, want %d", n, len(readAnnotations))
	} else if diff := cmp.Diff(readAnnotations, got.Annotations); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
	if got.ManagedFields != nil {
		t.Errorf("managed fields kept: %v", got.ManagedFields)
	}
	labels, annotations := got.Labels, got.Annotations
	again, _ := StripUnit(got)
	if u := again.(*schedulingv1alpha1.QueueUnit); reflect.ValueOf(u.Labels).UnsafePointer() != reflect.ValueOf(labels).UnsafePointer() ||
		reflect.ValueOf(u.Annotations).UnsafePointer() != reflect.ValueOf(annotations).UnsafePointer() {
		t.Error("stripping again replaced maps that needed no cut")
	}
	if other, _ := StripUnit(&corev1.Pod{}); other == nil {
		t.Error("StripUnit dropped an object that is not a QueueUnit")
	}
}
