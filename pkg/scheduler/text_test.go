package scheduler

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTextNamesUnitsOnlyToTheirNamespace(t *testing.T) {
	cases := map[string]struct {
		text   Text
		reader string
		want   string
	}{
		"a unit of the reader's namespace is named": {
			text: say("preempted by %s to reclaim the min of quota %s", unitRef("ta/a1"), "tb"), reader: "ta",
			want: "preempted by ta/a1 to reclaim the min of quota tb",
		},
		"a unit of another namespace is described": {
			text: say("preempted by %s to reclaim the min of quota %s", unitRef("ta/a1"), "tb"), reader: "tb",
			want: "preempted by a unit of another namespace to reclaim the min of quota tb",
		},
		"a list names the reader's units and counts the others": {
			text: say("preempting: %s", unitList{"tb/b1", "ta/a1", "tc/c1", "tb/b2"}), reader: "tb",
			want: "preempting: tb/b1, tb/b2, 2 units of other namespaces",
		},
		"a list of one other unit": {
			text: say("preempting: %s", unitList{"tb/b1", "ta/a1"}), reader: "tb",
			want: "preempting: tb/b1, a unit of another namespace",
		},
		"a list of the reader's units only": {
			text: say("preempting: %s", unitList{"tb/b1", "tb/b2"}), reader: "tb",
			want: "preempting: tb/b1, tb/b2",
		},
		"a private note is shown to the unit's namespace": {
			text:   say("waits for %s%s", unitRef("ta/a1"), privateNote{unit: "ta/a1", note: ": pod set main has 1 of 2 pods scheduled"}),
			reader: "ta", want: "waits for ta/a1: pod set main has 1 of 2 pods scheduled",
		},
		"a private note is left out for another namespace": {
			text:   say("waits for %s%s", unitRef("ta/a1"), privateNote{unit: "ta/a1", note: ": pod set main has 1 of 2 pods scheduled"}),
			reader: "tb", want: "waits for a unit of another namespace",
		},
		"a nested text is rendered for the same reader": {
			text:   say("preempted by %s %s", unitRef("ta/a1"), say("for higher-priority unit %s", unitRef("ta/a1"))),
			reader: "tb", want: "preempted by a unit of another namespace for higher-priority unit a unit of another namespace",
		},
		"words are kept as they are, percent signs too": {
			text: words("cpu 100% used"), reader: "ta", want: "cpu 100% used",
		},
		"a namespace that is a prefix of another's is another": {
			text: say("behind %s", unitRef("team-a/x")), reader: "team", want: "behind a unit of another namespace",
		},
		"String names no unit": {
			text: say("behind %s", unitRef("ta/a1")), reader: "", want: "behind a unit of another namespace",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.text.For(tc.reader)); diff != "" {
				t.Errorf("For(%q) (-want +got):\n%s", tc.reader, diff)
			}
		})
	}
}
