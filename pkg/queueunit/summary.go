package queueunit

import (
	"strconv"
	"strings"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
)

// maxSummaryLength is the API's bound on status.admissionsSummary.
const maxSummaryLength = 256

// AdmissionsSummary is what kubectl's ADMISSIONS column shows of
// admissions: each pod set's running/admitted replicas, "master 1/1, worker
// 2/3". A printer column's JSONPath prints a list as raw JSON, hence a field
// of its own. Past the API's bound, the last pod sets give way to "…".
func AdmissionsSummary(admissions []schedulingv1alpha1.Admission) string {
	parts := make([]string, len(admissions))
	for i, a := range admissions {
		parts[i] = a.Name + " " + strconv.FormatInt(a.Running, 10) + "/" + strconv.FormatInt(a.Replicas, 10)
	}
	s := strings.Join(parts, ", ")
	for n := len(parts) - 1; len(s) > maxSummaryLength && n > 0; n-- {
		s = strings.Join(parts[:n], ", ") + ", …"
	}
	if len(s) > maxSummaryLength {
		s = s[:maxSummaryLength-len("…")] + "…"
	}
	return s
}
