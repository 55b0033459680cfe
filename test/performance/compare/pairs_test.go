package compare

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/koord-queue/koord-queue/test/cluster"
)

func TestPairsAlternateWhoRunsFirst(t *testing.T) {
	var got [][]string
	for pair := 1; pair <= 3; pair++ {
		got = append(got, PairOrder(pair))
	}
	want := [][]string{{Kueue, KoordQueue}, {KoordQueue, Kueue}, {Kueue, KoordQueue}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("orders of pairs 1 to 3 (-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		system, only string
		want         bool
	}{
		{Kueue, "", false}, {KoordQueue, "", false},
		{Kueue, "koord-queue", true}, {KoordQueue, "koord-queue", false},
		{Kueue, "kueue", false}, {KoordQueue, "kueue", true},
	} {
		if got := Skipped(tc.system, tc.only); got != tc.want {
			t.Errorf("Skipped(%s, -only %q) = %v, want %v", tc.system, tc.only, got, tc.want)
		}
	}
}

func TestPairsRunEachSystemInItsPlace(t *testing.T) {
	for _, tc := range []struct {
		name          string
		only          string
		wantCalls     []string // system@pair-n
		wantPositions []int
	}{
		{"both, alternating", "", []string{"Kueue@pair-1", "koord-queue@pair-1", "koord-queue@pair-2", "Kueue@pair-2"}, []int{1, 2, 1, 2}},
		{"only koord-queue", "koord-queue", []string{"koord-queue@pair-1", "koord-queue@pair-2"}, []int{1, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Pairs{Name: "test", OutName: "test", Config: "baseline", Only: tc.only, Pairs: 2, Out: t.TempDir()}
			var calls []string
			var summarized []int
			err := p.Run(context.Background(), func(_ context.Context, system, dir string) (Measurement, error) {
				rel, err := filepath.Rel(p.Out, dir)
				if err != nil {
					t.Fatal(err)
				}
				if want := filepath.Join(filepath.Base(filepath.Dir(dir)), DirName(system)); rel != want {
					t.Errorf("run of %s into %s, want <out>/%s", system, rel, want)
				}
				calls = append(calls, system+"@"+filepath.Base(filepath.Dir(dir)))
				return Measurement{System: system, Dir: dir}, nil
			}, func(Measurement) string { return "" }, func(ms []Measurement) error {
				summarized = append(summarized, len(ms))
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantCalls, calls); diff != "" {
				t.Errorf("runs (-want +got):\n%s", diff)
			}
			ms, err := ReadMeasurements(p.Out)
			if err != nil {
				t.Fatal(err)
			}
			var positions []int
			for _, m := range ms {
				positions = append(positions, m.Position)
			}
			if diff := cmp.Diff(tc.wantPositions, positions); diff != "" {
				t.Errorf("positions in the pair (-want +got):\n%s", diff)
			}
			var wantSummaries []int
			for i := range tc.wantCalls {
				wantSummaries = append(wantSummaries, i+1)
			}
			if diff := cmp.Diff(wantSummaries, summarized); diff != "" {
				t.Errorf("runs in each summary (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPairsStopAtARunsError(t *testing.T) {
	p := Pairs{Pairs: 3, Out: t.TempDir()}
	runs := 0
	err := p.Run(context.Background(), func(context.Context, string, string) (Measurement, error) {
		runs++
		return Measurement{}, context.Canceled
	}, func(Measurement) string { return "" }, func([]Measurement) error { return nil })
	if !errors.Is(err, context.Canceled) || runs != 1 {
		t.Errorf("Run = %v after %d runs, want context.Canceled after 1", err, runs)
	}
}

func TestPairsComplete(t *testing.T) {
	for _, tc := range []struct {
		name, config, only, out string
		wantOut                 string
		wantErr                 bool
	}{
		{name: "baseline", config: "baseline", wantOut: filepath.Join("_output", "perf", "compare-jobs")},
		{name: "another config", config: "smoke", wantOut: filepath.Join("_output", "perf", "compare-jobs-smoke")},
		{name: "-out kept", config: "smoke", out: "/tmp/x", wantOut: "/tmp/x"},
		{name: "unknown -only", config: "baseline", only: "both", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Pairs{OutName: "compare-jobs", Config: tc.config, Only: tc.only, Out: tc.out}
			err := p.Complete()
			if (err != nil) != tc.wantErr {
				t.Fatalf("Complete() = %v, want error %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			want := tc.wantOut
			if tc.out == "" {
				want = filepath.Join(cluster.RepoRoot(), tc.wantOut)
			}
			if p.Out != want {
				t.Errorf("-out %s, want %s", p.Out, want)
			}
		})
	}
}

func TestPrepareOutRemovesOnlyEarlierRuns(t *testing.T) {
	p := Pairs{Out: filepath.Join(t.TempDir(), "out")}
	for _, dir := range []string{"pair-1/kueue", "pair-2/koord-queue", "bin"} {
		if err := os.MkdirAll(filepath.Join(p.Out, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.PrepareOut(); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(p.Out)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if diff := cmp.Diff([]string{"bin"}, got); diff != "" {
		t.Errorf("left in -out (-want +got):\n%s", diff)
	}
}
