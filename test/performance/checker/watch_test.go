package checker

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
)

// at is u as the API server returns it after its write at revision rv.
func at(u *schedulingv1alpha1.QueueUnit, rv string) *schedulingv1alpha1.QueueUnit {
	u = u.DeepCopy()
	u.ResourceVersion = rv
	return u
}

// A relist reaches the ledger in the order its changes were made, whatever
// the order of the list (the API server's, by key), and a unit gone from it
// is released first: parent's max is 4, and w (2, of b) is admitted while
// the watch is down.
func TestRelistIsRecordedInTheOrderOfItsChanges(t *testing.T) {
	w, x, y, v := unit("w", "b", "2"), unit("x", "a", "2"), unit("y", "b", "2"), unit("v", "a", "1")
	cases := map[string]struct {
		// first is the first list, relist the list after the gap.
		first, relist []any
		wantOver      []OverAdmission
	}{
		"after y finished": {
			first:  []any{at(w, "5"), at(admitted(x), "10"), at(admitted(y), "11")},
			relist: []any{at(admitted(w), "21"), at(admitted(x), "10"), at(finished(y), "20")},
		},
		"before y finished": {
			first:    []any{at(w, "5"), at(admitted(x), "10"), at(admitted(y), "11")},
			relist:   []any{at(admitted(w), "15"), at(admitted(x), "10"), at(finished(y), "20")},
			wantOver: []OverAdmission{{Quota: "parent", UsedMilli: 6000, MaxMilli: 4000, Unit: "ns/w"}},
		},
		"after v was deleted": {
			first:  []any{at(admitted(v), "4"), at(w, "5"), at(admitted(x), "10")},
			relist: []any{at(admitted(w), "21"), at(admitted(x), "10")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := twoChildren(4)
			r := NewRecorder(s, t0, 4)
			store := newLedgerStore(r, func() time.Time { return t0 })
			if err := store.Replace(tc.first, "11"); err != nil {
				t.Fatal(err)
			}
			if err := store.Replace(tc.relist, "21"); err != nil {
				t.Fatal(err)
			}
			res := r.Summarize(s)
			if diff := cmp.Diff(tc.wantOver, res.OverAdmissionExamples, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("over-admissions (-want +got):\n%s", diff)
			}
		})
	}
}
