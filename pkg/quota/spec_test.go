package quota

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
)

func TestOlderFirst(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	eq := func(namespace string, created time.Time) *elasticquotav1alpha1.ElasticQuota {
		return &elasticquotav1alpha1.ElasticQuota{ObjectMeta: metav1.ObjectMeta{
			Name: "team-a", Namespace: namespace, CreationTimestamp: metav1.NewTime(created),
		}}
	}
	cases := map[string]struct {
		quotas []*elasticquotav1alpha1.ElasticQuota
		want   []string
	}{
		"the oldest comes first": {
			quotas: []*elasticquotav1alpha1.ElasticQuota{eq("a", t0.Add(time.Second)), eq("b", t0)},
			want:   []string{"b", "a"},
		},
		"created in the same second: the namespace that sorts first": {
			quotas: []*elasticquotav1alpha1.ElasticQuota{eq("z", t0), eq("m", t0), eq("a", t0.Add(time.Hour))},
			want:   []string{"m", "z", "a"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			slices.SortFunc(tc.quotas, OlderFirst)
			var got []string
			for _, q := range tc.quotas {
				got = append(got, q.Namespace)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("order (-want +got):\n%s", diff)
			}
		})
	}
}
