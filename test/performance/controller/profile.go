package controller

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
)

// profileSeconds is how long each CPU profile lasts: the run is covered
// by consecutive ones, which `go tool pprof` merges when given them all.
const profileSeconds = 10

// Profiler takes a binary's CPU profiles from its /debug/pprof (it runs
// with --pprof-bind-address) while a run lasts, and its heap profile at
// the end.
type Profiler struct {
	program, addr, dir string
	cancel             context.CancelFunc
	wg                 sync.WaitGroup
}

// StartProfiles writes <dir>/cpu-<program>-<n>.pprof, one every
// profileSeconds, until Stop; a profile cut short by Stop is not written.
func StartProfiles(ctx context.Context, program, addr, dir string) *Profiler {
	ctx, cancel := context.WithCancel(ctx)
	p := &Profiler{program: program, addr: addr, dir: dir, cancel: cancel}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for n := 0; ctx.Err() == nil; n++ {
			path := filepath.Join(dir, fmt.Sprintf("cpu-%s-%03d.pprof", program, n))
			if err := fetchTo(ctx, "http://"+addr+fmt.Sprintf("/debug/pprof/profile?seconds=%d", profileSeconds), path); err != nil {
				return
			}
		}
	}()
	return p
}

// Stop ends the CPU profiles and writes <dir>/heap-<program>.pprof: the
// heap after a collection, with every allocation the run made
// (-sample_index=alloc_space).
func (p *Profiler) Stop(ctx context.Context) error {
	p.cancel()
	p.wg.Wait()
	if _, err := LiveHeap(ctx, p.addr, filepath.Join(p.dir, "heap-"+p.program+".pprof")); err != nil {
		return fmt.Errorf("profiling %s: %w", p.program, err)
	}
	return nil
}

// fetchTo writes what url answers to path.
func fetchTo(ctx context.Context, url, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	return os.WriteFile(path, body, 0o644)
}
