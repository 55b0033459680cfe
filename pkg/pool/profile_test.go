package pool_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	quotav1alpha1 "github.com/koord-queue/koord-queue/apis/quota/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/pool"
)

// TestProfileOf: of the profiles naming a root, the one its profile label
// names, else the oldest, else the first by name; profiles of another
// namespace or root do not count.
func TestProfileOf(t *testing.T) {
	at := func(sec int64) metav1.Time { return metav1.NewTime(time.Unix(sec, 0)) }
	profile := func(namespace, name, root string, created metav1.Time) *quotav1alpha1.ElasticQuotaProfile {
		return &quotav1alpha1.ElasticQuotaProfile{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, CreationTimestamp: created},
			Spec:       quotav1alpha1.ElasticQuotaProfileSpec{QuotaName: root},
		}
	}
	older, newer := profile("kube-system", "b", "root", at(10)), profile("kube-system", "a", "root", at(20))
	sameSecond := profile("kube-system", "c", "root", at(10))
	cases := map[string]struct {
		labelled    string
		profiles    []*quotav1alpha1.ElasticQuotaProfile
		want        string
		wantIgnored []string
	}{
		"the only one":                            {profiles: []*quotav1alpha1.ElasticQuotaProfile{older}, want: "b"},
		"the oldest, whatever the names":          {profiles: []*quotav1alpha1.ElasticQuotaProfile{newer, older}, want: "b", wantIgnored: []string{"a"}},
		"created in one second: first by name":    {profiles: []*quotav1alpha1.ElasticQuotaProfile{sameSecond, older}, want: "b", wantIgnored: []string{"c"}},
		"the one the root's label names":          {labelled: "a", profiles: []*quotav1alpha1.ElasticQuotaProfile{older, newer}, want: "a", wantIgnored: []string{"b"}},
		"a label naming none of them: the oldest": {labelled: "x", profiles: []*quotav1alpha1.ElasticQuotaProfile{newer, older}, want: "b", wantIgnored: []string{"a"}},
		"another namespace or root does not count": {
			profiles: []*quotav1alpha1.ElasticQuotaProfile{profile("elsewhere", "a", "root", at(1)), profile("kube-system", "z", "other", at(1)), newer},
			want:     "a",
		},
		"none names it": {profiles: []*quotav1alpha1.ElasticQuotaProfile{profile("kube-system", "z", "other", at(1))}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			chosen, ignored := pool.ProfileOf("kube-system", "root", tc.labelled, tc.profiles)
			got := ""
			if chosen != nil {
				got = chosen.Name
			}
			var gotIgnored []string
			for _, p := range ignored {
				gotIgnored = append(gotIgnored, p.Name)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("chosen (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantIgnored, gotIgnored); diff != "" {
				t.Errorf("ignored (-want +got):\n%s", diff)
			}
		})
	}
}
