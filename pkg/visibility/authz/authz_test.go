package authz

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/visibility/api"
)

// reviewer answers from a table of user → namespaces ("" for all) and
// counts the questions.
type reviewer struct {
	allowed map[string][]string
	err     error
	asked   []string
}

func (r *reviewer) Allowed(_ context.Context, u User, attrs Attributes) (bool, error) {
	ns := attrs.Namespace
	if attrs != ListQueueUnits(ns) {
		return false, fmt.Errorf("asked about %+v, not listing QueueUnits", attrs)
	}
	r.asked = append(r.asked, u.Name+"/"+ns)
	if r.err != nil {
		return false, r.err
	}
	for _, n := range r.allowed[u.Name] {
		if n == ns {
			return true, nil
		}
	}
	return false, nil
}

func TestCanList(t *testing.T) {
	cases := map[string]struct {
		user      string
		namespace string
		want      bool
		wantAsked []string
	}{
		"an admin allowed everywhere is asked once, for every namespace": {
			user: "admin", namespace: "team-b", want: true, wantAsked: []string{"admin/"},
		},
		"a tenant sees its own namespace": {
			user: "alice", namespace: "team-a", want: true, wantAsked: []string{"alice/", "alice/team-a"},
		},
		"a tenant does not see another's namespace": {
			user: "alice", namespace: "team-b", want: false, wantAsked: []string{"alice/", "alice/team-b"},
		},
		"a user without rights sees nothing": {
			user: "mallory", namespace: "team-a", want: false, wantAsked: []string{"mallory/", "mallory/team-a"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := &reviewer{allowed: map[string][]string{"admin": {""}, "alice": {"team-a"}}}
			a := NewAuthorizer(r, WithClock(clocktesting.NewFakePassiveClock(time.Unix(0, 0))))
			got, err := a.CanList(context.Background(), User{Name: tc.user}, tc.namespace)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("CanList = %v, want %v", got, tc.want)
			}
			if diff := cmp.Diff(tc.wantAsked, r.asked); diff != "" {
				t.Errorf("questions asked (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCanListCachesForTTL(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(0, 0))
	r := &reviewer{allowed: map[string][]string{"alice": {"team-a"}}}
	a := NewAuthorizer(r, WithClock(clk), WithTTL(10*time.Second))
	ask := func() bool {
		t.Helper()
		ok, err := a.CanList(context.Background(), User{Name: "alice"}, "team-a")
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	ask()
	clk.SetTime(time.Unix(9, 0))
	r.allowed = nil // the RoleBinding is removed
	if !ask() {
		t.Error("within the TTL: not allowed, want the cached answer")
	}
	if len(r.asked) != 2 {
		t.Errorf("asked %v within the TTL, want the two first questions only", r.asked)
	}
	clk.SetTime(time.Unix(10, 0))
	if ask() {
		t.Error("after the TTL: allowed, want the new answer")
	}
	if len(r.asked) != 4 {
		t.Errorf("asked %v after the TTL, want both questions again", r.asked)
	}
}

func TestCanListDoesNotCacheErrors(t *testing.T) {
	r := &reviewer{err: errors.New("API server down")}
	a := NewAuthorizer(r, WithClock(clocktesting.NewFakePassiveClock(time.Unix(0, 0))))
	if _, err := a.CanList(context.Background(), User{Name: "alice"}, "team-a"); err == nil {
		t.Fatal("no error, want the reviewer's")
	}
	r.err = nil
	r.allowed = map[string][]string{"alice": {"team-a"}}
	ok, err := a.CanList(context.Background(), User{Name: "alice"}, "team-a")
	if err != nil || !ok {
		t.Errorf("after the API server is back: %v, %v, want allowed", ok, err)
	}
}

func TestCacheTellsUsersApart(t *testing.T) {
	r := &reviewer{allowed: map[string][]string{"alice": {"team-a"}}}
	a := NewAuthorizer(r, WithClock(clocktesting.NewFakePassiveClock(time.Unix(0, 0))))
	if ok, _ := a.CanList(context.Background(), User{Name: "alice", Groups: []string{"a"}}, "team-a"); !ok {
		t.Fatal("alice not allowed")
	}
	// Same name, other groups: another identity to the authorizer.
	r.allowed = nil
	if ok, _ := a.CanList(context.Background(), User{Name: "alice", Groups: []string{"b"}}, "team-a"); ok {
		t.Error("alice in group b allowed from alice in group a's answer")
	}
}

func TestRedactUnits(t *testing.T) {
	units := []api.UnitView{
		{Namespace: "team-b", Name: "big", Queue: "shared", QuotaRule: "label", Phase: schedulingv1alpha1.Enqueued, Priority: 9, Position: 1, Reason: "waiting for cpu", Request: nil},
		{Namespace: "team-a", Name: "mine", Queue: "shared", Phase: schedulingv1alpha1.Enqueued, Priority: 1, Position: 2, Reason: "1 unit ahead"},
	}
	r := &reviewer{allowed: map[string][]string{"alice": {"team-a"}}}
	a := NewAuthorizer(r, WithClock(clocktesting.NewFakePassiveClock(time.Unix(0, 0))))
	got, err := RedactUnits(units, a.ForUser(context.Background(), User{Name: "alice"}))
	if err != nil {
		t.Fatal(err)
	}
	want := []api.UnitView{
		{Queue: "shared", Phase: schedulingv1alpha1.Enqueued, Priority: 9, Position: 1, Redacted: true},
		units[1],
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("units (-want +got):\n%s", diff)
	}
	got, err = RedactUnits(units, Everyone)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(units, got); diff != "" {
		t.Errorf("units in the open mode (-want +got):\n%s", diff)
	}
}

func TestForUserAsksOncePerNamespace(t *testing.T) {
	r := &reviewer{allowed: map[string][]string{"alice": {"team-a"}}}
	// A TTL of 0 turns the cache off: what is left is the request's memo.
	a := NewAuthorizer(r, WithClock(clocktesting.NewFakePassiveClock(time.Unix(0, 0))), WithTTL(0))
	visible := a.ForUser(context.Background(), User{Name: "alice"})
	for range 3 {
		if _, err := visible("team-b"); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff([]string{"alice/", "alice/team-b"}, r.asked); diff != "" {
		t.Errorf("questions asked (-want +got):\n%s", diff)
	}
}

func TestFilterAdmissions(t *testing.T) {
	records := []api.AdmissionRecord{{Namespace: "team-b", Name: "x"}, {Namespace: "team-a", Name: "y"}}
	r := &reviewer{allowed: map[string][]string{"alice": {"team-a"}}}
	a := NewAuthorizer(r)
	got, err := FilterAdmissions(records, a.ForUser(context.Background(), User{Name: "alice"}))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(records[1:], got); diff != "" {
		t.Errorf("admissions (-want +got):\n%s", diff)
	}
}

type tokens map[string]User

func (ts tokens) ReviewToken(_ context.Context, token string) (User, bool, error) {
	u, ok := ts[token]
	return u, ok, nil
}

func TestAuthenticate(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(0, 0))
	ts := tokens{"t-alice": {Name: "alice"}}
	a := NewAuthenticator(ts, WithClock(clk), WithTTL(10*time.Second))
	cases := []struct {
		token    string
		at       int64
		revoke   bool
		wantUser User
		wantOK   bool
	}{
		{token: "t-alice", wantUser: User{Name: "alice"}, wantOK: true},
		{token: "nope", wantOK: false},
		{token: "t-alice", at: 9, revoke: true, wantUser: User{Name: "alice"}, wantOK: true}, // cached
		{token: "t-alice", at: 10, wantOK: false},                                            // expired, asked again
	}
	for i, tc := range cases {
		clk.SetTime(time.Unix(tc.at, 0))
		if tc.revoke {
			delete(ts, "t-alice")
		}
		u, ok, err := a.Authenticate(context.Background(), "192.0.2.1", tc.token)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.wantUser, u); diff != "" || ok != tc.wantOK {
			t.Errorf("case %d: ok %v want %v, user (-want +got):\n%s", i, ok, tc.wantOK, diff)
		}
	}
}
