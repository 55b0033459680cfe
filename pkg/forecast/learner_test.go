package forecast_test

import (
	"testing"
	"time"

	"github.com/koord-queue/koord-queue/pkg/forecast"
	qt "github.com/koord-queue/koord-queue/pkg/quota/quotatest"
)

func TestLearner(t *testing.T) {
	small, big := qt.Res("cpu", "1"), qt.Res("cpu", "16")
	gpu := qt.Res("cpu", "1", "nvidia.com/gpu", "8")
	var l forecast.Learner
	if _, ok := l.Runtime("team", small); ok {
		t.Fatal("a new Learner knows a runtime")
	}
	l.Observe("team", small, 10*time.Minute)
	l.Observe("team", small, 20*time.Minute) // 10 + 0.2 × 10
	l.Observe("team", big, time.Hour)
	l.Observe("team", gpu, 3*time.Hour)
	l.Observe("other", small, time.Minute)
	l.Observe("team", small, -time.Minute) // ignored
	cases := map[string]struct {
		quota   string
		request map[string]string
		want    time.Duration
		known   bool
	}{
		"decaying average":                   {"team", map[string]string{"cpu": "1"}, 12 * time.Minute, true},
		"a size of the same class shares it": {"team", map[string]string{"cpu": "1500m"}, 12 * time.Minute, true},
		"another size class":                 {"team", map[string]string{"cpu": "16"}, time.Hour, true},
		"GPUs make their own class":          {"team", map[string]string{"cpu": "1", "nvidia.com/gpu": "8"}, 3 * time.Hour, true},
		"another quota":                      {"other", map[string]string{"cpu": "1"}, time.Minute, true},
		"nothing learned for this class":     {"team", map[string]string{"cpu": "4"}, 0, false},
		"nothing learned for this quota":     {"nobody", map[string]string{"cpu": "1"}, 0, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var pairs []string
			for k, v := range tc.request {
				pairs = append(pairs, k, v)
			}
			got, known := l.Runtime(tc.quota, qt.Res(pairs...))
			if got != tc.want || known != tc.known {
				t.Errorf("Runtime = %v, %v; want %v, %v", got, known, tc.want, tc.known)
			}
		})
	}
}
