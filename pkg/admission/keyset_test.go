package admission

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestKeySetMatchesASortedList: random inserts and removals; the set's
// length and every page of it (Each from a random place, stopped after a
// random count) match a sorted list of the same keys.
func TestKeySetMatchesASortedList(t *testing.T) {
	for seed := range int64(20) {
		rng := rand.New(rand.NewSource(seed))
		var s keySet
		model := map[string]bool{}
		for step := range 400 {
			key := fmt.Sprintf("ns-%d/u%02d", rng.Intn(3), rng.Intn(40))
			if rng.Intn(3) == 0 {
				s.Remove(key)
				delete(model, key)
			} else {
				s.Insert(key)
				model[key] = true
			}
			sorted := make([]string, 0, len(model))
			for k := range model {
				sorted = append(sorted, k)
			}
			slices.Sort(sorted)
			from, count := rng.Intn(len(sorted)+2), rng.Intn(6)
			want := sorted[min(from, len(sorted)):]
			want = want[:min(count, len(want))]
			var got []string
			s.Each(from, func(k string) bool {
				if len(got) == count {
					return false
				}
				got = append(got, k)
				return true
			})
			if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" || s.Len() != len(sorted) {
				t.Fatalf("seed %d step %d: Len %d, want %d; Each(%d) for %d keys (-want +got):\n%s", seed, step, s.Len(), len(sorted), from, count, diff)
			}
		}
	}
}
