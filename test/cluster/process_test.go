package cluster_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/koord-queue/koord-queue/test/cluster"
	"github.com/koord-queue/koord-queue/test/testenv"
)

func TestProcessStopsItsGroup(t *testing.T) {
	cases := map[string]struct {
		script   string
		grace    time.Duration
		wantExit string
	}{
		"a process that heeds SIGTERM stops with it": {
			script:   `echo ready; sleep 60 & wait`,
			grace:    time.Minute,
			wantExit: "signal: terminated",
		},
		"a group that ignores SIGTERM is killed after the grace period": {
			script:   `trap "" TERM; echo ready; sleep 60 & wait`,
			grace:    100 * time.Millisecond,
			wantExit: "signal: killed",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			logPath := filepath.Join(t.TempDir(), "script.log")
			p, err := cluster.RunProcess(logPath, "sh", "-c", tc.script)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(p.Kill)
			testenv.Eventually(t, 10*time.Second, func(context.Context) error {
				out, err := os.ReadFile(logPath)
				if err != nil || !strings.Contains(string(out), "ready") {
					return fmt.Errorf("the script's log says %q (%v), want ready", out, err)
				}
				return nil
			})
			if err := p.Err(); err != nil {
				t.Fatalf("running script: %v", err)
			}
			p.Stop(tc.grace)
			want := fmt.Sprintf("script exited (%s; log in %s)", tc.wantExit, logPath)
			if err := p.Err(); err == nil || err.Error() != want {
				t.Errorf("after Stop: Err() = %v, want %s", err, want)
			}
			// The sleep the script started goes with it.
			testenv.Eventually(t, 10*time.Second, func(context.Context) error {
				if live := liveInGroup(t, p.Pid()); len(live) > 0 {
					return fmt.Errorf("after Stop, process group %d still has %v", p.Pid(), live)
				}
				return nil
			})
		})
	}
}

// liveInGroup lists the commands of the processes of group pgid that have
// not exited (zombies not counted: they wait only to be reaped).
func liveInGroup(t *testing.T, pgid int) []string {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	var live []string
	for _, path := range stats {
		stat, err := os.ReadFile(path)
		if err != nil {
			continue // exited since the glob
		}
		// After the command, in parentheses: state, ppid, pgrp, ...
		s := string(stat)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 2 && fields[0] != "Z" && fields[2] == strconv.Itoa(pgid) {
			live = append(live, s[strings.IndexByte(s, '(')+1:strings.LastIndexByte(s, ')')])
		}
	}
	return live
}
