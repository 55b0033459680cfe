package admission

import (
	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
)

// What koord-queue reads of a QueueUnit's labels and annotations, and so
// all that the binary's cache keeps of them (CutMetadata). A tenant writes
// a job's labels and annotations and its extension copies them into the
// unit: the API server lets a unit carry 256 KiB of annotations and, in
// labels, about as much as the object may hold (1.5 MiB), which a cache
// would keep for the unit's life.
//
//   - Labels: the quota the unit names (QuotaNameFromLabels, read by
//     queueunit.QuotaOfUnit and queueunit.Admissible), and whichever
//     labels a Queue's admission checks select units by (selectedChecks):
//     any of them, so all are kept while they cost at most maxLabelBytes.
//     Past that only the quota's labels are kept, and the unit is marked
//     (labelsCut) so that every admission check with a selector applies to
//     it: a tenant cannot slip past a check by pushing the label it
//     selects by out of the bound.
//   - Annotations: the rule that chose the unit's quota
//     (AnnotationQuotaRule, read by queueunit.QuotaOfUnit), when its
//     value is at most maxAnnotationValue bytes (the rules' names are
//     short). No other annotation of a unit is read.
//
// Whoever makes koord-queue read another label or annotation of a unit
// adds it here, or the cache drops it.
var (
	quotaLabels     = []string{elasticquotav1alpha1.LabelQuotaName, elasticquotav1alpha1.LabelQuotaNameAlibabaCloud}
	annotationsRead = []string{schedulingv1alpha1.AnnotationQuotaRule}
)

const (
	// maxLabelBytes bounds what a unit's labels may cost (labelCost): 4
	// KiB holds some forty labels of forty bytes.
	maxLabelBytes = 4096
	// labelRoom is what a label costs besides its key and value: a map's
	// entry and two strings' headers.
	labelRoom          = 64
	maxAnnotationValue = 256
	// labelsCut marks a unit whose labels were cut.
	labelsCut = "koord-queue/labels cut"
)

// CutMetadata cuts a unit's labels and annotations to what koord-queue
// reads of them (see above). koord-queue never writes a unit's labels or
// annotations, and writes a unit by a patch of what its change made
// different (patch.Patch), so what is dropped stays on the unit.
//
// It writes into no map it was given (a streamed list cuts each unit
// twice, and after the first pass its maps may be other units' too): a
// unit's maps that need no cut are kept, others replaced. The mark
// (labelsCut) is not a valid annotation key: no writer of units can set it,
// and a unit cut again keeps it.
func CutMetadata(u *schedulingv1alpha1.QueueUnit) {
	cut := labelCost(u.Labels) > maxLabelBytes
	if cut {
		var kept map[string]string
		for _, key := range quotaLabels {
			if v, ok := u.Labels[key]; ok {
				if kept == nil {
					kept = map[string]string{}
				}
				kept[key] = v
			}
		}
		u.Labels = kept
	}
	if cut || !onlyRead(u.Annotations) {
		var kept map[string]string
		for key, v := range u.Annotations {
			if readAnnotation(key, v) {
				if kept == nil {
					kept = map[string]string{}
				}
				kept[key] = v
			}
		}
		if cut {
			if kept == nil {
				kept = map[string]string{}
			}
			kept[labelsCut] = ""
		}
		u.Annotations = kept
	}
}

// labelCost is what a unit's labels cost to keep: the bytes of their keys
// and values, and labelRoom for each.
func labelCost(labels map[string]string) int {
	cost := 0
	for k, v := range labels {
		cost += len(k) + len(v) + labelRoom
	}
	return cost
}

// onlyRead reports whether annotations holds only annotations koord-queue
// reads (and the mark of labels cut).
func onlyRead(annotations map[string]string) bool {
	for key, v := range annotations {
		if !readAnnotation(key, v) {
			return false
		}
	}
	return true
}

// readAnnotation reports whether koord-queue reads an annotation key of
// this value, or it is the mark of labels cut.
func readAnnotation(key, value string) bool {
	if key == labelsCut {
		return true
	}
	for _, read := range annotationsRead {
		if key == read {
			return len(value) <= maxAnnotationValue
		}
	}
	return false
}

// labelsWereCut reports whether u's labels were cut to the quota's
// (CutMetadata): which labels a selector would find is not known.
func labelsWereCut(u *schedulingv1alpha1.QueueUnit) bool {
	_, ok := u.Annotations[labelsCut]
	return ok
}
