package framework

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestOutgrownMarkIsBounded(t *testing.T) {
	cases := map[string]struct {
		grown []string
		want  string
	}{
		"short, whole": {
			grown: []string{"pod set workers: 5 pods, admitted 2", "pod set head: 2 pods, admitted 1"},
			want:  "pod set workers: 5 pods, admitted 2; pod set head: 2 pods, admitted 1",
		},
		"long, cut on a character": {
			grown: []string{strings.Repeat("a", maxOutgrownBytes-5) + "名前名前"},
			want:  strings.Repeat("a", maxOutgrownBytes-5) + " …",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := outgrownMark(tc.grown)
			if got != tc.want {
				t.Errorf("outgrownMark = %q, want %q", got, tc.want)
			}
			if len(got) > maxOutgrownBytes || !utf8.ValidString(got) {
				t.Errorf("outgrownMark is %d bytes (valid UTF-8: %v), want at most %d", len(got), utf8.ValidString(got), maxOutgrownBytes)
			}
		})
	}
}
