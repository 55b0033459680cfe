package queueunit

import (
	"strings"
	"testing"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
)

func TestAdmissionsSummary(t *testing.T) {
	long := strings.Repeat("p", 63)
	many := make([]schedulingv1alpha1.Admission, 8)
	for i := range many {
		many[i] = schedulingv1alpha1.Admission{Name: long[:62] + string(rune('a'+i)), Replicas: 1000, Running: 999}
	}
	cases := []struct {
		name       string
		admissions []schedulingv1alpha1.Admission
		want       string
	}{
		{name: "none"},
		{
			name:       "one pod set",
			admissions: []schedulingv1alpha1.Admission{{Name: "main", Replicas: 4, Running: 0}},
			want:       "main 0/4",
		},
		{
			name: "in the unit's order",
			admissions: []schedulingv1alpha1.Admission{
				{Name: "master", Replicas: 1, Running: 1},
				{Name: "worker", Replicas: 3, Running: 2},
			},
			want: "master 1/1, worker 2/3",
		},
		{
			name:       "past the API's bound: the last pod sets give way",
			admissions: many,
			want:       strings.Join([]string{many[0].Name + " 999/1000", many[1].Name + " 999/1000", many[2].Name + " 999/1000", "…"}, ", "),
		},
		{
			name:       "one pod set past the bound",
			admissions: []schedulingv1alpha1.Admission{{Name: strings.Repeat("x", 300), Replicas: 1}},
			want:       strings.Repeat("x", maxSummaryLength-len("…")) + "…",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := AdmissionsSummary(tc.admissions)
			if got != tc.want {
				t.Errorf("AdmissionsSummary() = %q, want %q", got, tc.want)
			}
			if len(got) > maxSummaryLength {
				t.Errorf("AdmissionsSummary() is %d bytes long, past the API's %d", len(got), maxSummaryLength)
			}
		})
	}
}
