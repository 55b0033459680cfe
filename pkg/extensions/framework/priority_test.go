package framework

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
)

// priorityJob names a priority class of its own.
type priorityJob struct {
	*fakeJob
	class string
}

func (j priorityJob) PriorityClassName() string { return j.class }

// TestResolvePriority: a unit's priority is the value of a PriorityClass,
// which only the cluster's admins write: the one the job names, else the
// global default, else 0. The integer priority a pod template may carry is
// the tenant's own word and is ignored (the API server's Priority admission
// refuses it on a pod, but nothing checks it inside a custom resource).
func TestResolvePriority(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := schedulingv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	high := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000}
	byDefault := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "normal"}, Value: 100, GlobalDefault: true}
	withTemplate := func(class string, value *int32) *fakeJob {
		j := newFakeJob("ns", nil)
		tmpl := wrappers.PodTemplate()
		tmpl.Spec.PriorityClassName, tmpl.Spec.Priority = class, value
		j.sets = []PodSet{{Name: "main", Template: &tmpl, Count: 1}}
		return j
	}
	cases := map[string]struct {
		classes     []client.Object
		job         GenericJob
		wantClass   string
		wantValue   *int32
		wantWarning string
	}{
		"no class and no default: none": {
			classes: []client.Object{high},
			job:     withTemplate("", nil),
		},
		"the template's class gives its value": {
			classes:   []client.Object{high},
			job:       withTemplate("high", ptr.To[int32](5)),
			wantClass: "high", wantValue: ptr.To[int32](1000),
		},
		"the template's integer priority is ignored": {
			classes: []client.Object{high},
			job:     withTemplate("", ptr.To[int32](2000000000)),
		},
		"without a class the global default gives its value": {
			classes:   []client.Object{high, byDefault},
			job:       withTemplate("", ptr.To[int32](2000000000)),
			wantClass: "normal", wantValue: ptr.To[int32](100),
		},
		"of two global defaults, the lower (as the API server's Priority admission)": {
			classes:   []client.Object{byDefault, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "low"}, Value: 10, GlobalDefault: true}},
			job:       withTemplate("", nil),
			wantClass: "low", wantValue: ptr.To[int32](10),
		},
		"an unknown class warns and takes no priority": {
			classes:     []client.Object{high},
			job:         withTemplate("missing", ptr.To[int32](5)),
			wantWarning: `PriorityClass "missing" does not exist; the unit takes the default priority (0, no global default PriorityClass)`,
		},
		"an unknown class warns and takes the global default": {
			classes:   []client.Object{high, byDefault},
			job:       withTemplate("missing", ptr.To[int32](5)),
			wantClass: "normal", wantValue: ptr.To[int32](100),
			wantWarning: `PriorityClass "missing" does not exist; the unit takes the default priority (100, of the global default PriorityClass normal)`,
		},
		"the job's own class comes first": {
			classes:   []client.Object{high, byDefault},
			job:       priorityJob{fakeJob: withTemplate("missing", nil), class: "high"},
			wantClass: "high", wantValue: ptr.To[int32](1000),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tc.classes...).Build()
			sets, _ := tc.job.PodSets()
			class, value, warning, err := resolvePriority(context.Background(), c, tc.job, sets)
			if err != nil {
				t.Fatal(err)
			}
			if class != tc.wantClass {
				t.Errorf("class = %q, want %q", class, tc.wantClass)
			}
			if diff := cmp.Diff(tc.wantValue, value); diff != "" {
				t.Errorf("value (-want +got):\n%s", diff)
			}
			gotWarning := ""
			if warning != nil {
				gotWarning = warning.Reason + ": " + warning.Message
			}
			wantWarning := ""
			if tc.wantWarning != "" {
				wantWarning = ReasonUnknownPriorityClass + ": " + tc.wantWarning
			}
			if gotWarning != wantWarning {
				t.Errorf("warning = %q, want %q", gotWarning, wantWarning)
			}
		})
	}
}
