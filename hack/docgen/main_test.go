package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseHelp(t *testing.T) {
	help := `Usage of koord-queue:
  -burst int
    	burst of queries to the API server (default 100)
  -kubeconfig string
    	Paths to a kubeconfig. Only required if out-of-cluster.
  -leader-elect
    	elect a leader; only the leader admits (default true)
  -zap-devel
    	Development Mode defaults
    	spanning two lines
`
	got, err := parseHelp(help)
	if err != nil {
		t.Fatal(err)
	}
	want := []helpFlag{
		{name: "burst", typ: "int", def: "`100`", usage: "burst of queries to the API server"},
		{name: "kubeconfig", typ: "string", usage: "Paths to a kubeconfig. Only required if out-of-cluster."},
		{name: "leader-elect", typ: "bool", def: "`true`", usage: "elect a leader; only the leader admits"},
		{name: "zap-devel", typ: "bool", def: "`false`", usage: "Development Mode defaults spanning two lines"},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(helpFlag{})); diff != "" {
		t.Errorf("parseHelp (-want +got):\n%s", diff)
	}
	if _, err := parseHelp("flag provided but not defined: -h"); err == nil {
		t.Error("parseHelp of an output with no flag: want an error")
	}
}

func TestStripName(t *testing.T) {
	cases := map[string]struct{ doc, name, want string }{
		"is":             {"queuePolicy is Priority (the default).", "queuePolicy", "Priority (the default)."},
		"colon":          {"LabelX: marks a quota.", "LabelX", "Marks a quota."},
		"kept otherwise": {"name of the admission check.", "name", "name of the admission check."},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := stripName(tc.doc, tc.name); got != tc.want {
				t.Errorf("stripName(%q, %q) = %q, want %q", tc.doc, tc.name, got, tc.want)
			}
		})
	}
}
