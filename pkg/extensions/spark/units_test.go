package spark

import (
	"strings"
	"testing"
)

func TestMebibytes(t *testing.T) {
	cases := []struct {
		in      string
		want    int64
		wantErr string
	}{
		{in: "512m", want: 512},
		{in: "2g", want: 2048},
		{in: "2G", want: 2048},
		{in: " 1gb ", want: 1024},
		{in: "1t", want: 1 << 20},
		{in: "1024", want: 1024},  // no unit: MiB
		{in: "1536k", want: 1},    // rounded down to whole MiB, as Spark does
		{in: "1048576b", want: 1}, // bytes
		{in: "1.5g", wantErr: "no fractions"},
		{in: "2x", wantErr: `unknown unit "x"`},
		{in: "-1g", wantErr: "not a Spark size"},
		{in: "", wantErr: "not a Spark size"},
		{in: "2Gi", wantErr: `unknown unit "gi"`},
		{in: "99999999p", wantErr: "more than a pebibyte"},
	}
	for _, tc := range cases {
		got, err := mebibytes(tc.in)
		switch {
		case tc.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("mebibytes(%q) = %d, %v; want an error saying %q", tc.in, got, err, tc.wantErr)
			}
		case err != nil || got != tc.want:
			t.Errorf("mebibytes(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}
