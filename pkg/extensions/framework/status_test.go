package framework

import (
	"testing"
	"time"
)

// TestReleasedAt: the release time a job records is read back as written,
// in Koord-Queue's form too (Go's time.Time.String, with its monotonic
// clock reading); anything else is no time.
func TestReleasedAt(t *testing.T) {
	at := time.Date(2026, 12, 3, 10, 5, 0, 1, time.UTC)
	for name, tc := range map[string]struct {
		value string
		want  time.Time
	}{
		"written here":                         {value: dequeueTimestamp(at), want: at},
		"written by Koord-Queue":               {value: "2026-12-03 10:05:00.000000001 +0000 UTC m=+56.000000001", want: at},
		"written by Koord-Queue, another zone": {value: "2026-12-03 18:05:00.000000001 +0800 CST m=+56.000000001", want: at},
		"cleared, as Koord-Queue does":         {value: ""},
		"not a time":                           {value: "yesterday"},
	} {
		t.Run(name, func(t *testing.T) {
			if got := releasedAt(tc.value); !got.Equal(tc.want) {
				t.Errorf("releasedAt(%q) = %v, want %v", tc.value, got, tc.want)
			}
		})
	}
}
