package pool

import (
	"slices"
	"strings"

	quotav1alpha1 "github.com/koord-queue/koord-queue/apis/quota/v1alpha1"
)

// ProfileOf chooses the ElasticQuotaProfile of the quota tree root named
// name in namespace, whose quota.scheduling.koordinator.sh/profile label is
// labelled (empty: none), among profiles: of those in namespace whose
// spec.quotaName is name, the one the label names, else the oldest
// (created first; of two created in the same second, the first by name).
// The others naming the root are ignored, in that order. koord-queue
// computing the tree's capacity and koord-queue-controllers putting the
// pool's node affinity on the tree's pods both choose by it, so they never
// take different profiles of one root. chosen is nil when none names it.
func ProfileOf(namespace, name, labelled string, profiles []*quotav1alpha1.ElasticQuotaProfile) (chosen *quotav1alpha1.ElasticQuotaProfile, ignored []*quotav1alpha1.ElasticQuotaProfile) {
	var naming []*quotav1alpha1.ElasticQuotaProfile
	for _, p := range profiles {
		if p.Namespace == namespace && p.Spec.QuotaName == name {
			naming = append(naming, p)
		}
	}
	if len(naming) == 0 {
		return nil, nil
	}
	slices.SortFunc(naming, func(a, b *quotav1alpha1.ElasticQuotaProfile) int {
		if labelled != "" && (a.Name == labelled) != (b.Name == labelled) {
			if a.Name == labelled {
				return -1
			}
			return 1
		}
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return naming[0], naming[1:]
}
