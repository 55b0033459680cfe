package admission

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	toolscache "k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
)

func TestStartPhasesSayWhereTheTimeWent(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(seconds float64) time.Time { return t0.Add(time.Duration(seconds * float64(time.Second))) }
	tests := []struct {
		name   string
		phases startPhases
		want   []any
	}{
		{
			name: "a cold start lists and rebuilds before it leads, the rebuild may end after",
			phases: startPhases{process: at(0), listed: at(3), leading: at(4), rebuilt: at(4.5),
				firstCycleDone: at(4.75), firstCycleAdmissions: 100},
			want: []any{"sinceProcessStartSeconds", 4.75, "listSeconds", 3.0, "beforeLeadingSeconds", 4.0,
				"rebuildSeconds", 1.5, "sinceLeadingSeconds", 0.75, "firstCycleSeconds", 0.25, "firstCycleAdmissions", 100},
		},
		{
			name: "a standby listed and rebuilt long before it led",
			phases: startPhases{process: at(0), listed: at(3), rebuilt: at(4), leading: at(60),
				firstCycleDone: at(60.5), firstCycleAdmissions: 7},
			want: []any{"sinceProcessStartSeconds", 60.5, "listSeconds", 3.0, "beforeLeadingSeconds", 60.0,
				"rebuildSeconds", 1.0, "sinceLeadingSeconds", 0.5, "firstCycleSeconds", 0.5, "firstCycleAdmissions", 7},
		},
		{
			name:   "an unknown process start leaves its phases out",
			phases: startPhases{listed: at(2), rebuilt: at(2), leading: at(1), firstCycleDone: at(3)},
			want: []any{"rebuildSeconds", 0.0, "sinceLeadingSeconds", 2.0,
				"firstCycleSeconds", 1.0, "firstCycleAdmissions", 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.phases.keysAndValues()); diff != "" {
				t.Errorf("keysAndValues (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWaitSyncedSaysWhenListedAndRebuilt(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(now)
	yes := func() bool { return true }
	listed, rebuilt, err := waitSynced(context.Background(), clk, nil, []toolscache.InformerSynced{yes, yes})
	if err != nil {
		t.Fatalf("waitSynced: %v", err)
	}
	if !listed.Equal(now) || !rebuilt.Equal(now) {
		t.Errorf("waitSynced with no list to wait for = listed %v, rebuilt %v; want both %v", listed, rebuilt, now)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	no := func() bool { return false }
	if _, _, err := waitSynced(ctx, clk, []toolscache.InformerSynced{yes}, []toolscache.InformerSynced{no}); err == nil {
		t.Error("waitSynced on a Cache never rebuilt and a context ended: no error")
	}
}

// TestLoopLogsThroughItsOwnLogger: controller-runtime starts a runnable
// with a context that carries no logger, so the Loop logs, and its writer
// with it, through the logger Setup gave it.
func TestLoopLogsThroughItsOwnLogger(t *testing.T) {
	ww := newWriterWorld(t, victim())
	firstCycleLine(t, ww)
}

// TestLoopAdmitsNothingInAClusterWithoutNodes: a leader that starts where
// the informers listed no node decides as a replica that saw the last node
// go: the cluster's capacity is zero, and a unit its quota has room for
// waits. (It admitted the unit, as if the cluster had no bound, when the
// capacity was set only by a node seen.)
func TestLoopAdmitsNothingInAClusterWithoutNodes(t *testing.T) {
	u := victim()
	u.Labels = map[string]string{elasticquotav1alpha1.LabelQuotaName: "q"}
	ww := newWriterWorld(t, u)
	ww.serveQuota()
	ww.cache.UpsertUnit(u)
	if line := firstCycleLine(t, ww); !strings.Contains(line, `"firstCycleAdmissions"=0`) {
		t.Errorf("the first cycle admitted in a cluster without nodes: %s", line)
	}
}

// firstCycleLine starts a Loop on ww with the logger Setup would give it
// (and a context with none), and returns the line it logs once its first
// cycle has decided; then it stops the Loop.
func firstCycleLine(t *testing.T, ww writerWorld) string {
	t.Helper()
	lines := make(chan string, 100)
	log := funcr.New(func(prefix, args string) {
		select {
		case lines <- prefix + " " + args:
		default:
		}
	}, funcr.Options{})
	loop := &Loop{cache: ww.cache, writer: ww.writer, clock: ww.clock, log: log.WithName("admission")}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- loop.Start(ctx) }()
	var first string
	for line := range lines {
		if strings.Contains(line, "Started leading: where the time went") {
			first = line
			break
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Start: %v", err)
	}
	return first
}
