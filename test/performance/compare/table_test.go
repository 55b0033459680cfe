package compare

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/koord-queue/koord-queue/test/performance/checker"
)

var nan = math.NaN()

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []float64
		want float64
	}{
		{"one", []float64{3}, 3},
		{"odd count, unsorted", []float64{9, 1, 4}, 4},
		{"even count: the mean of the middle two", []float64{4, 1, 10, 2}, 3},
		{"NaN left out", []float64{nan, 5, 7, nan, 6}, 6},
		{"none", nil, nan},
		{"only NaN", []float64{nan, nan}, nan},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Median(tc.in), cmpopts.EquateNaNs()); diff != "" {
				t.Errorf("Median(%v) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

func TestRatio(t *testing.T) {
	for _, tc := range []struct {
		a, b, want float64
	}{
		{3, 4, 0.75},
		{1, 0, nan},
		{nan, 2, nan},
		{2, nan, nan},
	} {
		if diff := cmp.Diff(tc.want, Ratio(tc.a, tc.b), cmpopts.EquateNaNs()); diff != "" {
			t.Errorf("Ratio(%v, %v) (-want +got):\n%s", tc.a, tc.b, diff)
		}
	}
}

// measurement is a run with the given wall, large-class mean and writes.
func measurement(system string, pair, position int, wall, large float64, writes int) Measurement {
	return Measurement{
		System: system, Pair: pair, Position: position, WallSeconds: wall, CPUSeconds: wall / 10, Cores: 0.1,
		PeakRSSMiB: 100, AvgToAdmission: map[string]float64{"small": 2 * large, "large": large},
		Units: 100, Evictions: 0, Admissions: 100, Writes: writes,
	}
}

func row(t *testing.T, tab Table, name string) Row {
	t.Helper()
	for _, r := range tab.Rows {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no row %q in %v", name, tab.Rows)
	return Row{}
}

func TestBuildTable(t *testing.T) {
	failed := measurement(Kueue, 3, 1, 1000, 1000, 1000)
	failed.Error = "runner timed out"
	ms := []Measurement{
		measurement(Kueue, 1, 1, 400, 30, 500),
		measurement(KoordQueue, 1, 2, 360, 20, 110),
		measurement(KoordQueue, 2, 1, 340, 10, 120),
		measurement(Kueue, 2, 2, 420, 40, 700),
		failed,
		measurement(KoordQueue, 3, 2, 350, 30, -1),
	}
	tab := BuildTable(ms)
	if diff := cmp.Diff([]string{"Kueue, koord-queue", "koord-queue, Kueue", "Kueue, koord-queue"}, tab.Orders); diff != "" {
		t.Errorf("orders (-want +got):\n%s", diff)
	}
	var names []string
	for _, r := range tab.Rows {
		names = append(names, r.Name)
	}
	wantNames := []string{
		"wall (s)", "mean time to admission, large (s)", "mean time to admission, small (s)",
		"cores used (CPU s / wall)", "CPU (s)", "peak RSS (MiB)", "API writes per admission", "API writes",
		"admissions (units + evictions)", "evictions", "kube-apiserver + etcd CPU (s)",
	}
	if diff := cmp.Diff(wantNames, names); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
	approx := cmpopts.EquateApprox(0, 1e-9)
	nans := cmpopts.EquateNaNs()
	for _, tc := range []struct {
		row                   string
		kueue, koordQueue     []float64
		kueueMed, koordMed, r float64
	}{
		// The failed run is left out: Kueue's median is of two.
		{"wall (s)", []float64{400, 420, nan}, []float64{360, 340, 350}, 410, 350, 350.0 / 410},
		{"mean time to admission, large (s)", []float64{30, 40, nan}, []float64{20, 10, 30}, 35, 20, 20.0 / 35},
		// Writes not counted (-1) are not zero.
		{"API writes per admission", []float64{5, 7, nan}, []float64{1.1, 1.2, nan}, 6, 1.15, 1.15 / 6},
		// Not measured at all.
		{"kube-apiserver + etcd CPU (s)", []float64{nan, nan, nan}, []float64{nan, nan, nan}, nan, nan, nan},
	} {
		r := row(t, tab, tc.row)
		if diff := cmp.Diff(tc.kueue, r.Kueue, approx, nans); diff != "" {
			t.Errorf("%s, Kueue (-want +got):\n%s", tc.row, diff)
		}
		if diff := cmp.Diff(tc.koordQueue, r.KoordQueue, approx, nans); diff != "" {
			t.Errorf("%s, koord-queue (-want +got):\n%s", tc.row, diff)
		}
		got := []float64{r.KueueMedian, r.KoordQueueMedian, r.Ratio}
		if diff := cmp.Diff([]float64{tc.kueueMed, tc.koordMed, tc.r}, got, approx, nans); diff != "" {
			t.Errorf("%s, medians and ratio (-want +got):\n%s", tc.row, diff)
		}
	}
	wall := row(t, tab, "wall (s)")
	if diff := cmp.Diff(0.9, wall.PairRatio(0), approx); diff != "" {
		t.Errorf("pair 1's wall ratio (-want +got):\n%s", diff)
	}

	md := tab.Markdown()
	for _, want := range []string{
		"| wall (s) | 410.0 | 350.0 | 0.85 |",
		"| kube-apiserver + etcd CPU (s) | — | — | — |",
		"pair 2 (koord-queue, Kueue): Kueue | koord-queue | ÷",
		"| wall (s) | 400.0 | 360.0 | 0.90 | 420.0 | 340.0 | 0.81 | — | 350.0 | — |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
	data, err := json.Marshal(tab)
	if err != nil {
		t.Fatalf("encoding the table: %v", err)
	}
	if !strings.Contains(string(data), `"kueue":[400,420,null]`) {
		t.Errorf("JSON does not write a missing value as null: %s", data)
	}
}

func TestOnePairHasNoPairTable(t *testing.T) {
	md := BuildTable([]Measurement{measurement(Kueue, 1, 1, 400, 30, 500), measurement(KoordQueue, 1, 2, 360, 20, 110)}).Markdown()
	if strings.Contains(md, "Each pair") {
		t.Errorf("one pair's table repeats the pair:\n%s", md)
	}
}

func TestFromKoordQueue(t *testing.T) {
	res := &checker.Result{
		WallSeconds: 330, Units: 15000, Evictions: 40,
		Classes:    []checker.ClassResult{{Name: "large", AvgToAdmission: 0.9}, {Name: "small", AvgToAdmission: 198.9}},
		Controller: checker.ControllerStats{Mode: checker.ModeBinary, CPUSeconds: 36.6, AverageCores: 0.11, PeakRSSMiB: 189},
		Bounds:     []checker.BoundResult{{Name: "wall time", Want: "≤ 310.0s", Got: "330.0s", OK: false}},
	}
	want := Measurement{
		System: KoordQueue, WallSeconds: 330, CPUSeconds: 36.6, Cores: 0.11, PeakRSSMiB: 189,
		AvgToAdmission: map[string]float64{"large": 0.9, "small": 198.9},
		Units:          15000, Evictions: 40, Admissions: 15040, Writes: -1,
		Checks: []Check{{Name: "wall time", OK: false, Detail: "330.0s (want ≤ 310.0s)"}},
	}
	got := FromKoordQueue(res)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("FromKoordQueue (-want +got):\n%s", diff)
	}
	if got.Passed() {
		t.Errorf("a run that missed a bound passed")
	}
}
