package harness

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestReadStartPhasesReadsEveryLeadersStartInOrder(t *testing.T) {
	log := strings.Join([]string{
		`{"level":"info","ts":1.5,"logger":"koord-queue","msg":"Starting","leaderElection":true}`,
		`{"level":"info","ts":2,"logger":"admission","msg":"Started leading: where the time went","sinceProcessStartSeconds":4.75,"beforeLeadingSeconds":0.5,"sinceLeadingSeconds":4.25,"listSeconds":2.5,"rebuildSeconds":1.5,"firstCycleSeconds":0.25,"firstCycleAdmissions":100}`,
		`not JSON: a panic's stack, say`,
		`{"level":"info","ts":9,"logger":"admission","msg":"Started leading: where the time went","sinceProcessStartSeconds":60.5,"beforeLeadingSeconds":60,"sinceLeadingSeconds":0.5,"listSeconds":0,"rebuildSeconds":0,"firstCycleSeconds":0.5,"firstCycleAdmissions":7}`,
	}, "\n")
	got, err := ReadStartPhases(strings.NewReader(log))
	if err != nil {
		t.Fatalf("ReadStartPhases: %v", err)
	}
	want := []StartPhases{
		{SinceProcessStart: 4.75, BeforeLeading: 0.5, SinceLeading: 4.25, List: 2.5, Rebuild: 1.5, FirstCycle: 0.25, FirstCycleAdmissions: 100},
		{SinceProcessStart: 60.5, BeforeLeading: 60, SinceLeading: 0.5, FirstCycle: 0.5, FirstCycleAdmissions: 7},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ReadStartPhases (-want +got):\n%s", diff)
	}
	if got, want := got[0].untilRebuilt(), 4500*time.Millisecond; got != want {
		t.Errorf("untilRebuilt = %v, want %v (from the process's start to its first cycle)", got, want)
	}
}
