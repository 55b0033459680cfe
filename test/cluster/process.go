package cluster

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Process is one binary started in its own process group, so that stopping
// it also stops anything it started, and killed with its parent even when
// the parent dies without cleaning up. Its output goes to a log file that
// outlives it, for a failed test to show. The cluster runs its components
// with it; the e2e tests and the performance harness run koord-queue with it.
type Process struct {
	cmd    *exec.Cmd
	exited chan struct{}
	err    error
}

// RunProcess starts binary with args, its output appended to logPath. The
// log file's name, without ".log", names the process in errors.
func RunProcess(logPath, binary string, args ...string) (*Process, error) {
	return RunProcessEnv(logPath, nil, binary, args...)
}

// RunProcessEnv is RunProcess with env ("KEY=value", each overriding the
// same key) added to the environment the process inherits.
func RunProcessEnv(logPath string, env []string, binary string, args ...string) (*Process, error) {
	name := strings.TrimSuffix(filepath.Base(logPath), ".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening log of %s: %w", name, err)
	}
	cmd := exec.Command(binary, args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	// Pdeathsig stops the process with its parent even when the parent dies
	// without cleaning up (a killed test binary), so nothing is left behind.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &Process{cmd: cmd, exited: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		logFile.Close()
		p.err = fmt.Errorf("%s exited (%v; log in %s)", name, err, logPath)
		close(p.exited)
	}()
	return p, nil
}

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.exited }

// Err is nil while the process runs; once it has exited, it says which
// process, how it ended and where its log is.
func (p *Process) Err() error {
	select {
	case <-p.exited:
		return p.err
	default:
		return nil
	}
}

// Pid is the process's id, for reading /proc while it runs.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// State is the exited process's state (its CPU time and rusage); nil while
// it runs.
func (p *Process) State() *os.ProcessState {
	select {
	case <-p.exited:
		return p.cmd.ProcessState
	default:
		return nil
	}
}

// Stop sends SIGTERM to the process group, then SIGKILL after the grace
// period, and returns when the process has exited. It does nothing to a
// process that has already exited.
func (p *Process) Stop(grace time.Duration) {
	if p.Err() != nil {
		return
	}
	p.signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(grace):
		p.Kill()
	}
}

// Kill stops the process group at once (SIGKILL), as a crash would, and
// returns when the process has exited.
func (p *Process) Kill() {
	if p.Err() != nil {
		return
	}
	p.signal(syscall.SIGKILL)
	<-p.exited
}

// signal signals the process group, whose id is the process's.
func (p *Process) signal(sig syscall.Signal) { _ = syscall.Kill(-p.Pid(), sig) }
