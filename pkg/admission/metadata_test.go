package admission

import (
	"fmt"
	"maps"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
)

// manyLabels is n labels of tenant.example.com/, of 63-byte values: about
// 90 bytes each.
func manyLabels(n int) map[string]string {
	out := map[string]string{}
	for i := range n {
		out[fmt.Sprintf("tenant.example.com/l%05d", i)] = fmt.Sprintf("%063d", i)
	}
	return out
}

// TestAdmissionChecksOfAUnitWhoseLabelsWereCut: a unit whose labels the
// cache cut gets every admission check that selects units, whatever its
// labels were: a tenant who pushed the label a check selects by out of the
// bound (or padded a unit a check would skip) does not dodge it. Within the
// bound, selectors read the unit's labels.
func TestAdmissionChecksOfAUnitWhoseLabelsWereCut(t *testing.T) {
	queue := &schedulingv1alpha1.Queue{Spec: schedulingv1alpha1.QueueSpec{AdmissionChecks: []schedulingv1alpha1.AdmissionCheckWithSelector{
		{Name: "every-unit"},
		{Name: "team-a", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}},
		{Name: "not-reviewed", Selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "reviewed", Operator: metav1.LabelSelectorOpDoesNotExist},
		}}},
	}}}
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   []string
	}{{
		name:   "labels within the bound: the selectors read them",
		labels: map[string]string{"team": "b", "reviewed": "yes"},
		want:   []string{"every-unit"},
	}, {
		name:   "labels past the bound: every check",
		labels: func() map[string]string { m := manyLabels(1000); m["team"] = "a"; m["reviewed"] = "yes"; return m }(),
		want:   []string{"every-unit", "team-a", "not-reviewed"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			u := wrappers.MakeQueueUnit("u", "ns").Quota("q").Obj()
			maps.Copy(u.Labels, tc.labels)
			CutMetadata(u)
			got, err := selectedChecks(queue, u)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("checks (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCutMetadataAgainWritesNothingAndKeepsTheMark: a streamed list cuts
// each unit twice, and between the passes its maps may be shared with
// units already cached: the second pass changes neither map, and the unit
// stays marked cut. The mark is no key a writer of units could set.
func TestCutMetadataAgainWritesNothingAndKeepsTheMark(t *testing.T) {
	u := wrappers.MakeQueueUnit("u", "ns").Quota("q").Obj()
	maps.Copy(u.Labels, manyLabels(1000))
	u.Annotations = map[string]string{schedulingv1alpha1.AnnotationQuotaRule: "namespace name", "note": "x"}
	CutMetadata(u)
	labels, annotations := u.Labels, u.Annotations
	wantLabels, wantAnnotations := maps.Clone(labels), maps.Clone(annotations)
	CutMetadata(u)
	if !sameMap(u.Labels, labels) || !sameMap(u.Annotations, annotations) {
		t.Error("cutting again replaced maps that needed no cut")
	}
	if diff := cmp.Diff(wantLabels, u.Labels); diff != "" {
		t.Errorf("labels cut again (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantAnnotations, u.Annotations); diff != "" {
		t.Errorf("annotations cut again (-want +got):\n%s", diff)
	}
	if !labelsWereCut(u) {
		t.Error("the unit cut again is not marked cut")
	}
	if errs := validation.IsQualifiedName(labelsCut); len(errs) == 0 {
		t.Errorf("the mark %q is a valid annotation key: a tenant could set it", labelsCut)
	}
}
