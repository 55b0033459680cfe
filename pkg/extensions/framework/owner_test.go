package framework

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
)

// fakeKind is the kind of fakeJob, whose object is a Pod.
var fakeKind = schema.GroupKind{Kind: "Pod"}

// makerJob is a GenericJob whose object is a batch Job: the owner, in these
// tests, of the fake jobs it makes.
type makerJob struct{ *batchv1.Job }

func (j makerJob) Object() client.Object        { return j.Job }
func (makerJob) IsSuspended() bool              { return false }
func (makerJob) Suspend()                       {}
func (makerJob) Resume()                        {}
func (makerJob) PodSets() ([]PodSet, error)     { return nil, nil }
func (makerJob) Finished() (string, bool, bool) { return "", false, false }
func (makerJob) Pods() map[string]PodCount      { return nil }

// makerIntegration makes fake jobs (Pods); its units have the suffix
// "-maker-qu".
func makerIntegration() Integration {
	return Integration{
		Name: "maker", GVK: batchv1.SchemeGroupVersion.WithKind("Job"), UnitSuffix: "-maker-qu",
		NewJob: func() GenericJob { return makerJob{&batchv1.Job{}} },
		Makes:  func(k schema.GroupKind) bool { return k == fakeKind },
	}
}

func makerObject(name string, uid types.UID) *batchv1.Job {
	return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: uid}}
}

// makerUnit is the unit of the maker called name, controlled by uid, in
// phase phase, asking for 1 CPU.
func makerUnit(name string, uid types.UID, phase schedulingv1alpha1.QueueUnitPhase) *schedulingv1alpha1.QueueUnit {
	return &schedulingv1alpha1.QueueUnit{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-maker-qu", Namespace: "ns", OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "batch/v1", Kind: "Job", Name: name, UID: uid, Controller: ptr.To(true)},
		}},
		Spec:   schedulingv1alpha1.QueueUnitSpec{Request: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
		Status: schedulingv1alpha1.QueueUnitStatus{Phase: phase},
	}
}

// madeBy is a labelled fake job of one pod asking for 100m CPU whose
// controller reference names the maker called name with uid.
func madeBy(apiVersion, kind, name string, uid types.UID) *fakeJob {
	j := newFakeJob("ns", map[string]string{elasticquotav1alpha1.LabelQuotaName: "team-a"})
	j.sets = []PodSet{{Name: "main", Count: 1, Template: &corev1.PodTemplateSpec{Spec: podSpec("cpu", "100m")}}}
	j.ownedBy(metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: uid, Controller: ptr.To(true)})
	return j
}

// podSpec is a pod of one container requesting requests, name-amount
// pairs.
func podSpec(requests ...string) corev1.PodSpec {
	rl := corev1.ResourceList{}
	for i := 0; i+1 < len(requests); i += 2 {
		rl[corev1.ResourceName(requests[i])] = resource.MustParse(requests[i+1])
	}
	return corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: rl}}}}
}

// finishedAt gives u a true Finished condition since second sec.
func finishedAt(u *schedulingv1alpha1.QueueUnit, sec int64) *schedulingv1alpha1.QueueUnit {
	u.Status.Conditions = append(u.Status.Conditions, metav1.Condition{Type: schedulingv1alpha1.QueueUnitFinished,
		Status: metav1.ConditionTrue, Reason: "Succeeded", LastTransitionTime: metav1.Unix(sec, 0)})
	return u
}

// createdAt sets j's creation time to second sec.
func createdAt(j *fakeJob, sec int64) *fakeJob {
	j.pod.CreationTimestamp = metav1.Unix(sec, 0)
	return j
}

func ownerTestScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{elasticquotav1alpha1.AddToScheme, schedulingv1alpha1.AddToScheme, batchv1.AddToScheme, corev1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	return scheme
}

// TestJudgeOwnedJobs: a job another job made is left to its owner's
// admission only while that owner exists as named and is admitted;
// otherwise it is judged as any labelled job.
func TestJudgeOwnedJobs(t *testing.T) {
	queued := Verdict{Managed: true, EvenIfRunning: true, Quota: "team-a"}
	withOwner := func(why string) Verdict { v := queued; v.Owner = why; return v }
	cases := map[string]struct {
		objs []client.Object
		job  *fakeJob
		want Verdict
	}{
		"an owner that does not exist covers nothing": {
			job:  madeBy("batch/v1", "Job", "mine", "uid-1"),
			want: withOwner("its owner Job mine does not exist"),
		},
		"an owner of another UID than the reference's covers nothing": {
			objs: []client.Object{makerObject("mine", "uid-2"), makerUnit("mine", "uid-2", schedulingv1alpha1.Running)},
			job:  madeBy("batch/v1", "Job", "mine", "uid-1"),
			want: withOwner("its owner Job mine is not the object its owner reference names (UID uid-2, not uid-1)"),
		},
		"an owner that is not queued covers nothing": {
			objs: []client.Object{makerObject("mine", "uid-1")},
			job:  madeBy("batch/v1", "Job", "mine", "uid-1"),
			want: withOwner("its owner Job mine is not queued"),
		},
		"an owner whose unit of its name is another's covers nothing": {
			objs: []client.Object{makerObject("mine", "uid-1"), makerUnit("mine", "uid-0", schedulingv1alpha1.Running)},
			job:  madeBy("batch/v1", "Job", "mine", "uid-1"),
			want: withOwner("its owner Job mine is not queued"),
		},
		"an owner that waits in the queue covers nothing": {
			objs: []client.Object{makerObject("mine", "uid-1"), makerUnit("mine", "uid-1", schedulingv1alpha1.Enqueued)},
			job:  madeBy("batch/v1", "Job", "mine", "uid-1"),
			want: withOwner("its owner Job mine is not admitted (QueueUnit mine-maker-qu is Enqueued)"),
		},
		"an owner that finished before the job was made covers nothing": {
			objs: []client.Object{makerObject("mine", "uid-1"), finishedAt(makerUnit("mine", "uid-1", schedulingv1alpha1.Succeed), 10)},
			job:  createdAt(madeBy("batch/v1", "Job", "mine", "uid-1"), 11),
			want: withOwner("its owner Job mine is not admitted (QueueUnit mine-maker-qu is Succeed)"),
		},
		"an owner that finished without saying when covers nothing": {
			objs: []client.Object{makerObject("mine", "uid-1"), makerUnit("mine", "uid-1", schedulingv1alpha1.Succeed)},
			job:  createdAt(madeBy("batch/v1", "Job", "mine", "uid-1"), 9),
			want: withOwner("its owner Job mine is not admitted (QueueUnit mine-maker-qu is Succeed)"),
		},
		"an owner that finished covers nothing, not even the jobs it made while admitted": {
			objs: []client.Object{makerObject("mine", "uid-1"), finishedAt(makerUnit("mine", "uid-1", schedulingv1alpha1.Failed), 10)},
			job:  createdAt(madeBy("batch/v1", "Job", "mine", "uid-1"), 9),
			want: withOwner("its owner Job mine is not admitted (QueueUnit mine-maker-qu is Failed)"),
		},
		"an admitted owner covers the job: it is not queued by itself": {
			objs: []client.Object{makerObject("mine", "uid-1"), makerUnit("mine", "uid-1", schedulingv1alpha1.Dequeued)},
			job:  madeBy("batch/v1", "Job", "mine", "uid-1"),
		},
		"an owner whose job runs covers the job": {
			objs: []client.Object{makerObject("mine", "uid-1"), makerUnit("mine", "uid-1", schedulingv1alpha1.Running)},
			job:  madeBy("batch/v1", "Job", "mine", "uid-1"),
		},
		"an owner of a kind that does not make such jobs is no owner": {
			objs: []client.Object{makerObject("mine", "uid-1"), makerUnit("mine", "uid-1", schedulingv1alpha1.Running)},
			job:  madeBy("ray.io/v1", "RayJob", "mine", "uid-1"),
			want: queued,
		},
		"an owner of the right kind name in another group is no owner": {
			objs: []client.Object{makerObject("mine", "uid-1"), makerUnit("mine", "uid-1", schedulingv1alpha1.Running)},
			job:  madeBy("example.com/v1", "Job", "mine", "uid-1"),
			want: queued,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(ownerTestScheme(t)).WithObjects(tc.objs...).
				WithIndex(&elasticquotav1alpha1.ElasticQuota{}, IndexQuotaNamespaces, QuotaNamespacesIndex).
				WithIndex(&elasticquotav1alpha1.ElasticQuota{}, IndexQuotaName, QuotaNameIndex).Build()
			scope := Scope{Owners: []Integration{makerIntegration()}}
			got, err := scope.Judge(context.Background(), c, fakeKind, tc.job)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("verdict (-want +got):\n%s", diff)
			}
		})
	}
}

// podJob is a GenericJob over a Pod standing for one pod like itself, read
// back from the client as jobs an owner made are: finished once Succeeded.
type podJob struct{ *corev1.Pod }

func (j podJob) Object() client.Object { return j.Pod }
func (podJob) IsSuspended() bool       { return false }
func (podJob) Suspend()                {}
func (podJob) Resume()                 {}
func (j podJob) PodSets() ([]PodSet, error) {
	return []PodSet{{Name: "main", Count: 1, Template: &corev1.PodTemplateSpec{Spec: j.Spec}}}, nil
}
func (j podJob) Finished() (string, bool, bool) {
	return "", true, j.Status.Phase == corev1.PodSucceeded
}
func (podJob) Pods() map[string]PodCount { return nil }

// podJobs is the integration of podJobs (kind Pod), no unit suffix.
func podJobs() Integration {
	return Integration{Name: "pod", GVK: corev1.SchemeGroupVersion.WithKind("Pod"), NewJob: func() GenericJob { return podJob{&corev1.Pod{}} }}
}

// made is a podJob called name, created at second sec (0: not created
// yet), asking for requests, made by the maker "mine" of uid.
func made(name string, sec int64, uid types.UID, requests ...string) podJob {
	var created metav1.Time
	if sec > 0 {
		created = metav1.Unix(sec, 0)
	}
	return podJob{&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-of-" + name), CreationTimestamp: created,
			Labels:          map[string]string{elasticquotav1alpha1.LabelQuotaName: "team-a"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "mine", UID: uid, Controller: ptr.To(true)}}},
		Spec: podSpec(requests...),
	}}
}

// answeringMaker is a maker whose unit answers for the jobs it makes
// (JobWithMadeJobs).
type answeringMaker struct{ makerJob }

func (answeringMaker) MadeKinds() []client.Object               { return nil }
func (answeringMaker) MadeSets(client.Object) ([]PodSet, error) { return nil, nil }

// TestCoveredWithinTheOwnersAdmission: an owner whose unit asks only for
// its own request (an Argo Workflow's koord-queue/min-resources) covers the
// jobs it made only within what that unit was admitted with, taken in the
// order they were made; an owner that answers for its made jobs covers
// them whatever their size.
func TestCoveredWithinTheOwnersAdmission(t *testing.T) {
	queued := Verdict{Managed: true, EvenIfRunning: true, Quota: "team-a"}
	withOwner := func(why string) Verdict { v := queued; v.Owner = why; return v }
	admitted := makerUnit("mine", "uid-1", schedulingv1alpha1.Running) // 1 CPU
	answering := makerIntegration()
	answering.NewJob = func() GenericJob { return answeringMaker{makerJob{&batchv1.Job{}}} }
	finished := made("done", 1, "uid-1", "cpu", "1")
	finished.Status.Phase = corev1.PodSucceeded
	queuedByItself := made("alone", 1, "uid-1", "cpu", "1")
	ownUnit := &schedulingv1alpha1.QueueUnit{ObjectMeta: metav1.ObjectMeta{Name: "alone", Namespace: "ns", OwnerReferences: []metav1.OwnerReference{
		{APIVersion: "v1", Kind: "Pod", Name: "alone", UID: queuedByItself.UID, Controller: ptr.To(true)}}}}
	cases := map[string]struct {
		owner Integration
		objs  []client.Object
		job   podJob
		want  Verdict
	}{
		"a job within the owner's admission is covered": {
			job: made("child", 5, "uid-1", "cpu", "1"),
		},
		"a job asking for more than the owner's admission is queued by itself": {
			job:  made("child", 5, "uid-1", "cpu", "8"),
			want: withOwner("its owner Job mine was admitted with cpu=1 and covers only that; the job asks for cpu=8"),
		},
		"a resource the owner was not admitted with is not covered": {
			job:  made("child", 5, "uid-1", "cpu", "500m", "memory", "1Gi"),
			want: withOwner("its owner Job mine was admitted with cpu=1 and covers only that; the job asks for cpu=500m, memory=1Gi"),
		},
		"the jobs made before take their share": {
			objs: []client.Object{made("first", 1, "uid-1", "cpu", "600m").Pod},
			job:  made("child", 5, "uid-1", "cpu", "600m"),
			want: withOwner("its owner Job mine was admitted with cpu=1 and covers only that; the job asks for cpu=600m, beyond the cpu=600m of the jobs it made before"),
		},
		"a job not created yet comes after every job made": {
			objs: []client.Object{made("first", 1, "uid-1", "cpu", "600m").Pod},
			job:  made("child", 0, "uid-1", "cpu", "600m"),
			want: withOwner("its owner Job mine was admitted with cpu=1 and covers only that; the job asks for cpu=600m, beyond the cpu=600m of the jobs it made before"),
		},
		"a job made later takes no place of one made earlier": {
			objs: []client.Object{made("later", 9, "uid-1", "cpu", "1").Pod},
			job:  made("child", 5, "uid-1", "cpu", "1"),
		},
		"a job made before that does not fit takes nothing": {
			objs: []client.Object{made("big", 1, "uid-1", "cpu", "8").Pod},
			job:  made("child", 5, "uid-1", "cpu", "1"),
		},
		"a job made before that ended takes nothing": {
			objs: []client.Object{finished.Pod},
			job:  made("child", 5, "uid-1", "cpu", "1"),
		},
		"a job made before that is queued by itself takes nothing": {
			objs: []client.Object{queuedByItself.Pod, ownUnit},
			job:  made("child", 5, "uid-1", "cpu", "1"),
		},
		"a job made by another object of the owner's name takes nothing": {
			objs: []client.Object{made("other", 1, "uid-0", "cpu", "1").Pod},
			job:  made("child", 5, "uid-1", "cpu", "1"),
		},
		"an owner that answers for the jobs it made covers them whatever their size": {
			owner: answering,
			job:   made("child", 5, "uid-1", "cpu", "8"),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			owner := tc.owner
			if owner.Name == "" {
				owner = makerIntegration()
			}
			objs := append([]client.Object{makerObject("mine", "uid-1"), admitted.DeepCopy()}, tc.objs...)
			c := fake.NewClientBuilder().WithScheme(ownerTestScheme(t)).WithObjects(objs...).
				WithIndex(&corev1.Pod{}, IndexJobController, PodOwnerIndex).
				WithIndex(&elasticquotav1alpha1.ElasticQuota{}, IndexQuotaNamespaces, QuotaNamespacesIndex).
				WithIndex(&elasticquotav1alpha1.ElasticQuota{}, IndexQuotaName, QuotaNameIndex).Build()
			scope := Scope{Owners: []Integration{owner}, Jobs: []Integration{podJobs()}}
			got, err := scope.Judge(context.Background(), c, podJobs().GVK.GroupKind(), tc.job)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("verdict (-want +got):\n%s", diff)
			}
		})
	}
}

// TestJobsMadeByUnitsJob: the unit of a job that makes jobs wakes the jobs
// it made, and only as it comes, goes, is admitted or leaves admission.
func TestJobsMadeByUnitsJob(t *testing.T) {
	scheme := ownerTestScheme(t)
	child := madeBy("batch/v1", "Job", "mine", "uid-1").pod
	other := madeBy("batch/v1", "Job", "theirs", "uid-9").pod
	other.Name = "other"
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(child, other).
		WithIndex(child, IndexJobController, PodOwnerIndex).Build()
	fakeInteg := Integration{Name: "fake", GVK: schema.GroupVersionKind{Version: "v1", Kind: "Pod"}}
	r := NewJobReconciler(c, c, nil, fakeInteg, WithScope(Scope{Owners: []Integration{makerIntegration()}}))

	got := r.jobsMadeByUnitsJob(context.Background(), makerUnit("mine", "uid-1", schedulingv1alpha1.Enqueued))
	want := []reconcile.Request{{NamespacedName: client.ObjectKeyFromObject(child)}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("jobs woken by the maker's unit (-want +got):\n%s", diff)
	}
	notAMaker := makerUnit("mine", "uid-1", schedulingv1alpha1.Enqueued)
	notAMaker.OwnerReferences[0].APIVersion = "ray.io/v1"
	if got := r.jobsMadeByUnitsJob(context.Background(), notAMaker); len(got) != 0 {
		t.Errorf("a unit of a kind that makes no such jobs woke %v, want none", got)
	}

	admitted := makerUnit("mine", "uid-1", schedulingv1alpha1.Running)
	waiting := makerUnit("mine", "uid-1", schedulingv1alpha1.Enqueued)
	stillAdmitted := makerUnit("mine", "uid-1", schedulingv1alpha1.Dequeued)
	for name, tc := range map[string]struct {
		old, new *schedulingv1alpha1.QueueUnit
		want     bool
	}{
		"evicted":        {admitted, waiting, true},
		"admitted":       {waiting, admitted, true},
		"still admitted": {stillAdmitted, admitted, false},
		"still waiting":  {waiting, waiting, false},
	} {
		if got := admissionChanged.Update(event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new}); got != tc.want {
			t.Errorf("unit %s: wakes the jobs it made %v, want %v", name, got, tc.want)
		}
	}
	if !admissionChanged.Delete(event.DeleteEvent{Object: admitted}) || !admissionChanged.Create(event.CreateEvent{Object: admitted}) {
		t.Error("a unit created or deleted does not wake the jobs its job made")
	}
}

// TestJobsMadeBySameOwner: a change to a job an owner made wakes the other
// jobs of the reconciler's kind that owner made, when they share its
// admission; an owner that answers for its made jobs wakes none.
func TestJobsMadeBySameOwner(t *testing.T) {
	first, second := made("first", 1, "uid-1"), made("second", 2, "uid-1")
	other := made("other", 3, "uid-9")
	other.OwnerReferences[0].Name = "theirs"
	c := fake.NewClientBuilder().WithScheme(ownerTestScheme(t)).WithObjects(first.Pod, second.Pod, other.Pod).
		WithIndex(&corev1.Pod{}, IndexJobController, PodOwnerIndex).Build()
	answering := makerIntegration()
	answering.NewJob = func() GenericJob { return answeringMaker{makerJob{&batchv1.Job{}}} }
	for name, tc := range map[string]struct {
		owner Integration
		want  []reconcile.Request
	}{
		"sharing its admission": {owner: makerIntegration(), want: []reconcile.Request{
			{NamespacedName: client.ObjectKeyFromObject(first.Pod)}, {NamespacedName: client.ObjectKeyFromObject(second.Pod)}}},
		"answered for by their owner": {owner: answering},
	} {
		t.Run(name, func(t *testing.T) {
			r := NewJobReconciler(c, c, nil, podJobs(), WithScope(Scope{Owners: []Integration{tc.owner}, Jobs: []Integration{podJobs()}}))
			got := r.jobsMadeBySameOwner(context.Background(), second.Pod)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("jobs woken (-want +got):\n%s", diff)
			}
		})
	}
}
