package framework

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/koord-queue/koord-queue/test/wrappers"
)

// priorityJob declares a priority of its own.
type priorityJob struct {
	*fakeJob
	class string
	value *int32
}

func (j priorityJob) Priority() (string, *int32) { return j.class, j.value }

func TestResolvePriority(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := schedulingv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).
		WithObjects(&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000}).Build()
	withTemplate := func(class string, value *int32) *fakeJob {
		j := newFakeJob("ns", nil)
		tmpl := wrappers.PodTemplate()
		tmpl.Spec.PriorityClassName, tmpl.Spec.Priority = class, value
		j.sets = []PodSet{{Name: "main", Template: &tmpl, Count: 1}}
		return j
	}
	cases := map[string]struct {
		job         GenericJob
		wantClass   string
		wantValue   *int32
		wantWarning bool
	}{
		"no priority at all": {
			job: withTemplate("", nil),
		},
		"the template's class gives its value": {
			job:       withTemplate("high", ptr.To[int32](5)),
			wantClass: "high", wantValue: ptr.To[int32](1000),
		},
		"without a class the template's value stands": {
			job:       withTemplate("", ptr.To[int32](5)),
			wantValue: ptr.To[int32](5),
		},
		"an unknown class warns and falls back to the template's value": {
			job:       withTemplate("missing", ptr.To[int32](5)),
			wantClass: "missing", wantValue: ptr.To[int32](5), wantWarning: true,
		},
		"the job's own class comes first": {
			job:       priorityJob{fakeJob: withTemplate("missing", nil), class: "high"},
			wantClass: "high", wantValue: ptr.To[int32](1000),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
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
			if (warning != nil) != tc.wantWarning {
				t.Errorf("warning = %v, want one: %v", warning, tc.wantWarning)
			}
		})
	}
}
