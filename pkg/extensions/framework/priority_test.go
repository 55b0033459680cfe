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

func (j priorityJob) PriorityClass() (name, field string) { return j.class, "spec.priorityClass" }

// TestResolvePriority: a unit's priority is the value of a PriorityClass,
// which only the cluster's admins write: the one the job names, else the
// global default, else 0. The integer priority a pod template may carry is
// the tenant's own word and is ignored (the API server's Priority admission
// refuses it on a pod, but nothing checks it inside a custom resource). A
// system class (system-node-critical, ...), or a class above the limit's
// ceiling, gives no priority unless the admin allowed it: the job gets a
// warning naming the field and the class, and the unit the default.
func TestResolvePriority(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := schedulingv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	high := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000}
	nodeCritical := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "system-node-critical"}, Value: 2000001000}
	clusterCritical := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "system-cluster-critical"}, Value: 2000000000}
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
		limit       *PriorityLimit // nil: DefaultPriorityLimit
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
			wantWarning: `UnknownPriorityClass: spec.priorityClassName of pod set main's template names PriorityClass "missing", which does not exist; the unit takes the default priority (0, no global default PriorityClass)`,
		},
		"an unknown class warns and takes the global default": {
			classes:   []client.Object{high, byDefault},
			job:       withTemplate("missing", ptr.To[int32](5)),
			wantClass: "normal", wantValue: ptr.To[int32](100),
			wantWarning: `UnknownPriorityClass: spec.priorityClassName of pod set main's template names PriorityClass "missing", which does not exist; the unit takes the default priority (100, of the global default PriorityClass normal)`,
		},
		"system-node-critical is refused: the default, and a warning naming the field and the class": {
			classes:   []client.Object{high, byDefault, nodeCritical},
			job:       withTemplate("system-node-critical", nil),
			wantClass: "normal", wantValue: ptr.To[int32](100),
			wantWarning: `PriorityClassNotAllowed: spec.priorityClassName of pod set main's template names PriorityClass "system-node-critical", ` +
				`a system PriorityClass (of value 2000001000), which units may take only if koord-queue-controllers' --allowed-system-priority-classes names it; ` +
				`the unit takes the default priority (100, of the global default PriorityClass normal)`,
		},
		"a system class named by the job's own field is refused, whatever the ceiling": {
			classes: []client.Object{clusterCritical},
			limit:   &PriorityLimit{Max: 2100000000},
			job:     priorityJob{fakeJob: withTemplate("", nil), class: "system-cluster-critical"},
			wantWarning: `PriorityClassNotAllowed: spec.priorityClass names PriorityClass "system-cluster-critical", ` +
				`a system PriorityClass (of value 2000000000), which units may take only if koord-queue-controllers' --allowed-system-priority-classes names it; ` +
				`the unit takes the default priority (0, no global default PriorityClass)`,
		},
		"a system class the admin allows gives its value": {
			classes:   []client.Object{clusterCritical, nodeCritical},
			limit:     &PriorityLimit{Max: HighestUserDefinablePriority, AllowedSystem: []string{"system-cluster-critical"}},
			job:       withTemplate("system-cluster-critical", nil),
			wantClass: "system-cluster-critical", wantValue: ptr.To[int32](2000000000),
		},
		"a class above the ceiling is refused": {
			classes: []client.Object{high},
			limit:   &PriorityLimit{Max: 999},
			job:     withTemplate("high", nil),
			wantWarning: `PriorityClassNotAllowed: spec.priorityClassName of pod set main's template names PriorityClass "high", ` +
				`of value 1000, above the highest priority a unit may take (999, koord-queue-controllers' --max-unit-priority); ` +
				`the unit takes the default priority (0, no global default PriorityClass)`,
		},
		"a class at the ceiling gives its value": {
			classes:   []client.Object{high},
			limit:     &PriorityLimit{Max: 1000},
			job:       withTemplate("high", nil),
			wantClass: "high", wantValue: ptr.To[int32](1000),
		},
		"a global default above the ceiling is no default": {
			classes: []client.Object{byDefault},
			limit:   &PriorityLimit{Max: 99},
			job:     withTemplate("", nil),
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
			limit := DefaultPriorityLimit
			if tc.limit != nil {
				limit = *tc.limit
			}
			class, value, warning, err := resolvePriority(context.Background(), c, limit, tc.job, sets)
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
			if gotWarning != tc.wantWarning {
				t.Errorf("warning = %q, want %q", gotWarning, tc.wantWarning)
			}
		})
	}
}
