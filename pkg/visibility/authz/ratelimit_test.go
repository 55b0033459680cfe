package authz

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestRateLimiterGivesEachUserABucket(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(0, 0))
	l := NewRateLimiter(2, 3, WithClock(clk))
	alice, bob := User{Name: "alice"}, User{Name: "bob"}
	var got []bool
	for range 4 {
		got = append(got, l.Allow(alice))
	}
	if diff := cmp.Diff([]bool{true, true, true, false}, got); diff != "" {
		t.Errorf("alice's burst of 4 at burst 3 (-want +got):\n%s", diff)
	}
	if !l.Allow(bob) {
		t.Error("bob was refused while only alice was over her rate")
	}
	if !l.Allow(User{Name: "alice", Groups: []string{"admins"}}) {
		t.Error("another identity of the same name shared alice's bucket")
	}
	clk.SetTime(clk.Now().Add(500 * time.Millisecond)) // one request back at 2 a second
	if !l.Allow(alice) || l.Allow(alice) {
		t.Error("after half a second alice should have exactly one request back")
	}
}

func TestForUserCapsReviews(t *testing.T) {
	allowed := map[string][]string{}
	for i := range 2 * MaxReviewsPerRequest {
		allowed["tenant"] = append(allowed["tenant"], fmt.Sprintf("ns-%d", i))
	}
	r := &reviewer{allowed: allowed}
	a := NewAuthorizer(r, WithClock(clocktesting.NewFakePassiveClock(time.Unix(0, 0))))
	visible := a.ForUser(t.Context(), User{Name: "tenant"})
	seen := 0
	for i := range 2 * MaxReviewsPerRequest {
		ok, err := visible(fmt.Sprintf("ns-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			seen++
		}
	}
	if seen != MaxReviewsPerRequest {
		t.Errorf("%d namespaces visible, want the first %d", seen, MaxReviewsPerRequest)
	}
	// One question for every namespace, plus the cached one for all.
	if len(r.asked) != MaxReviewsPerRequest+1 {
		t.Errorf("%d SubjectAccessReviews for one request, want %d", len(r.asked), MaxReviewsPerRequest+1)
	}
}
