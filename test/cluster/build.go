package cluster

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
)

// RepoRoot is the checkout's top directory.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// BuildBinary builds a main package of this module (such as "./cmd/queue")
// into dir and returns the binary's path.
func BuildBinary(ctx context.Context, pkg, dir, name string) (string, error) {
	out := filepath.Join(dir, name)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
	cmd.Dir = RepoRoot()
	if output, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", pkg, err, output)
	}
	return out, nil
}
