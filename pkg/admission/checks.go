package admission

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
)

// selectedChecks lists the queue's admission checks whose selector matches
// the unit (a nil selector matches every unit). A unit whose labels the
// cache cut (CutMetadata) gets every check with a valid selector: which of
// its labels a selector would find is not known, and a check it could
// dodge by adding labels would not be one.
func selectedChecks(q *schedulingv1alpha1.Queue, u *schedulingv1alpha1.QueueUnit) ([]string, error) {
	var names []string
	for _, check := range q.Spec.AdmissionChecks {
		if check.Selector != nil {
			sel, err := metav1.LabelSelectorAsSelector(check.Selector)
			if err != nil {
				return nil, fmt.Errorf("queue %s: admission check %s: %w", q.Name, check.Name, err)
			}
			if !labelsWereCut(u) && !sel.Matches(labels.Set(u.Labels)) {
				continue
			}
		}
		names = append(names, check.Name)
	}
	return names, nil
}
