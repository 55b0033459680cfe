package scheduler_test

import (
	"testing"
	"time"

	"github.com/koord-queue/koord-queue/pkg/quota"
	qt "github.com/koord-queue/koord-queue/pkg/quota/quotatest"
	"github.com/koord-queue/koord-queue/pkg/scheduler"
	st "github.com/koord-queue/koord-queue/pkg/scheduler/schedtest"
)

// TestTheSiblingWhoseMinBrokeTheRuleWaits: a-old's min is raised so that
// its and b-young's mins exceed their parent's. a-old's change broke the
// rule, so its units wait, saying so; b-young, unchanged, keeps admitting.
func TestTheSiblingWhoseMinBrokeTheRuleWaits(t *testing.T) {
	kid := func(name string, created int64, min string) quota.Spec {
		return qt.MakeSpec(name).Parent("org").Min("cpu", min).Max("cpu", "20").Created(time.Unix(created, 0)).Obj()
	}
	w := world{
		capacity: qt.Res("cpu", "40"),
		quotas: []quota.Spec{
			qt.MakeSpec("org").IsParent().Min("cpu", "10").Max("cpu", "40").Obj(),
			kid("a-old", 100, "5"), kid("b-young", 200, "5"),
		},
		queues: []scheduler.QueueSpec{st.MakeQueue("a-old").Obj(), st.MakeQueue("b-young").Obj()},
		units: []scheduler.Unit{
			st.MakeUnit("ns/a1", "a-old").Request("cpu", "1").Obj(),
			st.MakeUnit("ns/b1", "b-young").Request("cpu", "1").Obj(),
		},
	}
	s := w.build(t)
	runSteps(t, s, []step{
		{name: "both admit", want: outcome{Admitted: []string{"ns/a1", "ns/b1"}}},
		{
			name: "a-old's min is raised past its parent's room; both ask again",
			do: func(s *scheduler.Scheduler) {
				s.UpsertQuota(kid("a-old", 100, "8"))
				upsert(st.MakeUnit("ns/a2", "a-old").Request("cpu", "1").Obj(), st.MakeUnit("ns/b2", "b-young").Request("cpu", "1").Obj())(s)
			},
			at: time.Second,
			want: outcome{
				Admitted: []string{"ns/b2"},
				Waits: map[string]string{"ns/a2": `quota "a-old": its change to a cpu min of 8 takes its siblings' mins to 13, over the min 10 of its parent "org", ` +
					`so this quota, whose change broke the rule, is not used until its min or its parent's is set so they fit: children's mins add up to more than the parent's min`},
			},
		},
		{
			name: "a-old's min set back: it admits again",
			do:   func(s *scheduler.Scheduler) { s.UpsertQuota(kid("a-old", 100, "5")) },
			at:   2 * time.Second,
			want: outcome{Admitted: []string{"ns/a2"}},
		},
	})
}
