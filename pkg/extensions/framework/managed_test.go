package framework

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
)

func TestJudge(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := elasticquotav1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	quota := &elasticquotav1alpha1.ElasticQuota{ObjectMeta: metav1.ObjectMeta{
		Name: "team-b", Namespace: "default",
		Annotations: map[string]string{elasticquotav1alpha1.AnnotationQuotaNamespaces: `["served"]`},
	}}
	namedAfter := &elasticquotav1alpha1.ElasticQuota{ObjectMeta: metav1.ObjectMeta{Name: "both", Namespace: "both"}}
	servesBoth := &elasticquotav1alpha1.ElasticQuota{ObjectMeta: metav1.ObjectMeta{
		Name: "a-team", Namespace: "default",
		Annotations: map[string]string{elasticquotav1alpha1.AnnotationQuotaNamespaces: `["both"]`},
	}}
	notInItsNamespace := &elasticquotav1alpha1.ElasticQuota{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere", Namespace: "default"}}
	// Two ElasticQuotas of one name: koord-queue uses the older, created
	// first in the namespace that sorts last.
	older := metav1.NewTime(time.Unix(10, 0))
	usedCopy := &elasticquotav1alpha1.ElasticQuota{ObjectMeta: metav1.ObjectMeta{Name: "dup", Namespace: "z-older", CreationTimestamp: older,
		Annotations: map[string]string{elasticquotav1alpha1.AnnotationQuotaNamespaces: `["z-older-serves"]`}}}
	ignoredCopy := &elasticquotav1alpha1.ElasticQuota{ObjectMeta: metav1.ObjectMeta{Name: "dup", Namespace: "dup", CreationTimestamp: metav1.NewTime(older.Add(time.Hour)),
		Annotations: map[string]string{elasticquotav1alpha1.AnnotationQuotaNamespaces: `["ignored-serves"]`}}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(quota, namedAfter, servesBoth, notInItsNamespace, usedCopy, ignoredCopy).
		WithIndex(&elasticquotav1alpha1.ElasticQuota{}, IndexQuotaNamespaces, QuotaNamespacesIndex).
		WithIndex(&elasticquotav1alpha1.ElasticQuota{}, IndexQuotaName, QuotaNameIndex).Build()
	labelled := map[string]string{elasticquotav1alpha1.LabelQuotaName: "team-a"}
	oldLabel := map[string]string{elasticquotav1alpha1.LabelQuotaNameAlibabaCloud: "team-a"}

	cases := map[string]struct {
		job          GenericJob
		manageAll    bool
		leaveRunning bool
		want         Verdict
	}{
		"a labelled job is managed, even submitted running": {
			job:  newFakeJob("ns", labelled),
			want: Verdict{Managed: true, EvenIfRunning: true, Quota: "team-a"},
		},
		"the older Alibaba Cloud label counts too": {
			job:  newFakeJob("ns", oldLabel),
			want: Verdict{Managed: true, EvenIfRunning: true, Quota: "team-a"},
		},
		"with the compatibility switch a labelled job is managed only if submitted suspended": {
			job:          newFakeJob("ns", labelled),
			leaveRunning: true,
			want:         Verdict{Managed: true, Quota: "team-a"},
		},
		"an unlabelled job is not managed": {
			job: newFakeJob("ns", nil),
		},
		"an unlabelled job in a namespace a quota serves is managed there": {
			job:  newFakeJob("served", nil),
			want: Verdict{Managed: true, EvenIfRunning: true, Quota: "team-b", NamespaceQuota: "team-b", NamespaceRule: queueunit.QuotaByNamespacesAnnotation},
		},
		"an unlabelled job in a namespace with a quota of its name is managed there, before any annotation": {
			job:  newFakeJob("both", nil),
			want: Verdict{Managed: true, EvenIfRunning: true, Quota: "both", NamespaceQuota: "both", NamespaceRule: queueunit.QuotaByNamespaceName},
		},
		"a quota named after the namespace but living elsewhere does not serve it": {
			job: newFakeJob("elsewhere", nil),
		},
		"of two quotas of one name, the older serves its namespaces": {
			job:  newFakeJob("z-older-serves", nil),
			want: Verdict{Managed: true, EvenIfRunning: true, Quota: "dup", NamespaceQuota: "dup", NamespaceRule: queueunit.QuotaByNamespacesAnnotation},
		},
		"of two quotas of one name, the newer serves nothing": {
			job: newFakeJob("ignored-serves", nil),
		},
		"of two quotas of one name, the newer is not named after its namespace": {
			job: newFakeJob("dup", nil),
		},
		"manage-all-jobs manages every job, even running": {
			job:       newFakeJob("ns", nil),
			manageAll: true,
			want:      Verdict{Managed: true, EvenIfRunning: true},
		},
		"a job with its own check is managed when it says so, even running": {
			job:  customJob{fakeJob: newFakeJob("ns", nil), managed: true},
			want: Verdict{Managed: true, EvenIfRunning: true},
		},
		"a job with its own check is managed even running with the compatibility switch": {
			job:          customJob{fakeJob: newFakeJob("ns", nil), managed: true},
			leaveRunning: true,
			want:         Verdict{Managed: true, EvenIfRunning: true},
		},
		"a job with its own check is not managed for a label alone": {
			job:  customJob{fakeJob: newFakeJob("ns", labelled)},
			want: Verdict{Quota: "team-a"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			scope := Scope{ManageAllJobs: tc.manageAll, LeaveJobsSubmittedRunning: tc.leaveRunning}
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

func TestScopeValidate(t *testing.T) {
	if err := (Scope{ManageAllJobs: true, LeaveJobsSubmittedRunning: true}).Validate(); err == nil {
		t.Error("--manage-all-jobs with --leave-jobs-submitted-running: no error, want one")
	}
	for _, s := range []Scope{{}, {ManageAllJobs: true}, {LeaveJobsSubmittedRunning: true}} {
		if err := s.Validate(); err != nil {
			t.Errorf("%+v: %v", s, err)
		}
	}
}

func TestNamespacesNewlyServed(t *testing.T) {
	quota := func(name, ns, annotation string) *elasticquotav1alpha1.ElasticQuota {
		q := &elasticquotav1alpha1.ElasticQuota{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
		if annotation != "" {
			q.Annotations = map[string]string{elasticquotav1alpha1.AnnotationQuotaNamespaces: annotation}
		}
		return q
	}
	cases := map[string]struct {
		old, quota *elasticquotav1alpha1.ElasticQuota
		want       []string
	}{
		"a new quota serves what its annotation lists": {
			quota: quota("team-a", "default", `["a","b"]`),
			want:  []string{"a", "b"},
		},
		"a new quota named after its namespace serves it": {
			quota: quota("team-a", "team-a", `["b"]`),
			want:  []string{"b", "team-a"},
		},
		"a new quota in another namespace without the annotation serves none": {
			quota: quota("team-a", "default", ""),
		},
		"a malformed annotation serves none": {
			quota: quota("team-a", "default", `a,b`),
		},
		"a grown annotation serves what it added": {
			old:   quota("team-a", "default", `["a"]`),
			quota: quota("team-a", "default", `["b","a","c"]`),
			want:  []string{"b", "c"},
		},
		"a shrunk annotation serves nothing new": {
			old:   quota("team-a", "default", `["a","b"]`),
			quota: quota("team-a", "default", `["b"]`),
		},
		"a change elsewhere serves nothing new, even named after its namespace": {
			old:   quota("team-a", "team-a", `["a"]`),
			quota: quota("team-a", "team-a", `["a"]`),
		},
		"an annotation mended from malformed serves what it lists": {
			old:   quota("team-a", "default", `a`),
			quota: quota("team-a", "default", `["a"]`),
			want:  []string{"a"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var old client.Object
			if tc.old != nil {
				old = tc.old
			}
			got := namespacesNewlyServed(old, tc.quota)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("namespacesNewlyServed (-want +got):\n%s", diff)
			}
		})
	}
}
