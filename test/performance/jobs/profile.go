package jobs

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"

	"github.com/koord-queue/koord-queue/test/performance/controller"
)

// profileSeconds is how long each CPU profile lasts: the run is covered
// by consecutive ones, which `go tool pprof` merges when given them all.
const profileSeconds = 10

// profiler takes a binary's CPU profiles from its /debug/pprof while the
// Jobs run, and its heap profile at the end.
type profiler struct {
	program, addr, dir string
	cancel             context.CancelFunc
	wg                 sync.WaitGroup
}

// startProfiles writes <dir>/cpu-<program>-<n>.pprof, one every
// profileSeconds, until stop; a profile cut short by stop is not written.
func startProfiles(ctx context.Context, program, addr, dir string) *profiler {
	ctx, cancel := context.WithCancel(ctx)
	p := &profiler{program: program, addr: addr, dir: dir, cancel: cancel}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for n := 0; ctx.Err() == nil; n++ {
			path := filepath.Join(dir, fmt.Sprintf("cpu-%s-%03d.pprof", program, n))
			if err := fetch(ctx, "http://"+addr+fmt.Sprintf("/debug/pprof/profile?seconds=%d", profileSeconds), path); err != nil {
				return
			}
		}
	}()
	return p
}

// stop ends the CPU profiles and writes <dir>/heap-<program>.pprof: the
// heap after a collection, with every allocation the run made
// (-sample_index=alloc_space).
func (p *profiler) stop(ctx context.Context) error {
	p.cancel()
	p.wg.Wait()
	_, err := controller.LiveHeap(ctx, p.addr, filepath.Join(p.dir, "heap-"+p.program+".pprof"))
	return err
}

func fetch(ctx context.Context, url, path string) error {
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
