package compare

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/koord-queue/koord-queue/test/performance/controller"
	"github.com/koord-queue/koord-queue/test/testenv"
)

// TestServerCPUStopReadsTheLastCPU: Stop counts what a server used since
// the last sample, not only up to it. The interval is an hour, so the only
// samples are the one at the start and the one Stop takes.
func TestServerCPUStopReadsTheLastCPU(t *testing.T) {
	// A busy "etcd", a child of this process.
	busy := exec.Command(fakeServer(t, "sh", t.TempDir()), "-c", "while :; do :; done")
	if err := busy.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = busy.Process.Kill()
		_ = busy.Wait()
	})
	servers := FollowServers(context.Background(), os.Getpid(), time.Hour)
	testenv.Eventually(t, 10*time.Second, func(context.Context) error {
		servers.mu.Lock()
		defer servers.mu.Unlock()
		if _, ok := servers.last[busy.Process.Pid]; !ok {
			return fmt.Errorf("the busy etcd (pid %d) not sampled yet", busy.Process.Pid)
		}
		return nil
	})
	var used float64
	testenv.Eventually(t, 30*time.Second, func(context.Context) error {
		var err error
		if used, _, err = controller.ProcSample(busy.Process.Pid); err != nil || used < 0.3 {
			return fmt.Errorf("the busy etcd used %.2f s of CPU (%v), want 0.3", used, err)
		}
		return nil
	})
	if got := servers.Stop(); got < used {
		t.Errorf("Stop = %.2f s of CPU, want at least the %.2f s the process had used before it", got, used)
	}
}
