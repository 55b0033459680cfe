package compare

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/koord-queue/koord-queue/test/cluster"
)

// KueueModuleDir is the pinned Kueue module's root in the module cache
// (hack/tools/kueue's sigs.k8s.io/kueue).
func KueueModuleDir() (string, error) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/kueue")
	cmd.Dir = filepath.Join(cluster.RepoRoot(), "hack", "tools", "kueue")
	out, err := cmd.Output()
	dir := strings.TrimSpace(string(out))
	if err != nil || dir == "" {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			err = fmt.Errorf("%w: %s", err, exit.Stderr)
		}
		return "", fmt.Errorf("finding Kueue's module (hack/tools/kueue): %v", err)
	}
	return dir, nil
}

// GitCommit is the checkout's commit, "+dirty" if it has changes.
func GitCommit() string {
	cmd := exec.Command("git", "rev-parse", "--short", "HEAD")
	cmd.Dir = cluster.RepoRoot()
	out, err := cmd.Output()
	if err != nil {
		return "unknown"
	}
	commit := strings.TrimSpace(string(out))
	status := exec.Command("git", "status", "--porcelain", "--untracked-files=no")
	status.Dir = cluster.RepoRoot()
	if out, err := status.Output(); err == nil && len(strings.TrimSpace(string(out))) > 0 {
		commit += "+dirty"
	}
	return commit
}
