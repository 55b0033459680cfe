package quota_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/koord-queue/koord-queue/pkg/quota"
	qt "github.com/koord-queue/koord-queue/pkg/quota/quotatest"
)

// TestTheQuotaWhoseChangeBreaksTheTreeRuleIsInvalid: Koordinator's webhook
// refuses the update that would take the children's mins above their
// parent's. Here the update has happened, so the quota whose change broke
// the rule is the one made invalid, never an unchanged sibling. Quotas
// loaded before the first cycle (a restart) have no known order of change:
// among them the newest are refused.
func TestTheQuotaWhoseChangeBreaksTheTreeRuleIsInvalid(t *testing.T) {
	p := func(min string) quota.Spec { return qt.MakeSpec("p").IsParent().Min("cpu", min).Max("cpu", "40").Obj() }
	kid := func(name string, created int64, min string) quota.Spec {
		return qt.MakeSpec(name).Parent("p").Min("cpu", min).Max("cpu", "40").Created(time.Unix(created, 0)).Obj()
	}
	aOld := func(min string) quota.Spec { return kid("a-old", 100, min) }
	bYoung := func(min string) quota.Spec { return kid("b-young", 200, min) }
	cases := []struct {
		name string
		// loaded before the first cycle, then changed one by one.
		loaded, changes []quota.Spec
		want            map[string]error
	}{
		{
			name:    "an old quota's raised min is the invalid one, not its unchanged younger sibling",
			loaded:  []quota.Spec{p("10"), aOld("5"), bYoung("5")},
			changes: []quota.Spec{aOld("8")},
			want:    map[string]error{"a-old": quota.ErrChildrenMinAboveMin},
		},
		{
			name:   "after a restart nobody knows who changed: the newest sibling is refused",
			loaded: []quota.Spec{p("10"), aOld("8"), bYoung("5")},
			want:   map[string]error{"b-young": quota.ErrChildrenMinAboveMin},
		},
		{
			name:    "a quota set back to the min it was valid with is valid again",
			loaded:  []quota.Spec{p("10"), aOld("5"), bYoung("5")},
			changes: []quota.Spec{aOld("8"), aOld("5")},
			want:    map[string]error{},
		},
		{
			name:    "two changes that each break the rule are both refused",
			loaded:  []quota.Spec{p("10"), aOld("5"), bYoung("5")},
			changes: []quota.Spec{aOld("8"), bYoung("6")},
			want:    map[string]error{"a-old": quota.ErrChildrenMinAboveMin, "b-young": quota.ErrChildrenMinAboveMin},
		},
		{
			name:    "a change that fitted stays valid when a later one breaks the rule",
			loaded:  []quota.Spec{p("20"), aOld("5"), bYoung("5")},
			changes: []quota.Spec{aOld("8"), kid("c", 300, "10")},
			want:    map[string]error{"c": quota.ErrChildrenMinAboveMin},
		},
		{
			name:    "a quota created after the load that does not fit is the invalid one, however old its creation time",
			loaded:  []quota.Spec{p("10"), aOld("5"), bYoung("4")},
			changes: []quota.Spec{kid("c", 50, "2")},
			want:    map[string]error{"c": quota.ErrChildrenMinAboveMin},
		},
		{
			name:    "a quota moved under a parent whose min it does not fit is the invalid one",
			loaded:  []quota.Spec{p("10"), aOld("5"), bYoung("4"), qt.MakeSpec("c").Min("cpu", "2").Max("cpu", "40").Created(time.Unix(50, 0)).Obj()},
			changes: []quota.Spec{kid("c", 50, "2")},
			want:    map[string]error{"c": quota.ErrChildrenMinAboveMin},
		},
		{
			name:    "a parent whose lowered min no longer holds its children's is the invalid one",
			loaded:  []quota.Spec{p("10"), aOld("5"), bYoung("5")},
			changes: []quota.Spec{p("8")},
			want:    map[string]error{"p": quota.ErrChildrenMinAboveMin, "a-old": quota.ErrInvalidAncestor, "b-young": quota.ErrInvalidAncestor},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(t, qt.Res("cpu", "40"), tc.loaded, nil)
			e.MarkLoaded()
			for _, s := range tc.changes {
				e.UpsertQuota(s)
			}
			got := map[string]error{}
			for _, qe := range e.Errors() {
				got[qe.Quota] = qe.Err
			}
			if diff := cmp.Diff(tc.want, got, cmp.Comparer(func(want, got error) bool {
				return errors.Is(got, want) || errors.Is(want, got)
			})); diff != "" {
				t.Errorf("Errors (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTheInvalidQuotaSaysItsChangeBrokeTheRule: the message on the quota
// whose change broke the children's-mins rule (and so on its Queue and
// units) names the rule and says that its change is why.
func TestTheInvalidQuotaSaysItsChangeBrokeTheRule(t *testing.T) {
	p := qt.MakeSpec("p").IsParent().Min("cpu", "10").Max("cpu", "40").Obj()
	kid := func(name string, created int64, min string) quota.Spec {
		return qt.MakeSpec(name).Parent("p").Min("cpu", min).Max("cpu", "40").Created(time.Unix(created, 0)).Obj()
	}
	e := newEngine(t, qt.Res("cpu", "40"), []quota.Spec{p, kid("a-old", 100, "5"), kid("b-young", 200, "5")}, nil)
	e.MarkLoaded()
	e.UpsertQuota(kid("a-old", 100, "8"))
	want := map[string]string{
		"a-old": `quota "a-old": its change to a cpu min of 8 takes its siblings' mins to 13, over the min 10 of its parent "p", ` +
			`so this quota, whose change broke the rule, is not used until its min or its parent's is set so they fit: children's mins add up to more than the parent's min`,
		"b-young": "",
	}
	got := map[string]string{}
	for name := range want {
		got[name] = ""
		if err := e.Err(name); err != nil {
			got[name] = err.Error()
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Err (-want +got):\n%s", diff)
	}
}
