package harness

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/koord-queue/koord-queue/test/performance/checker"
	"github.com/koord-queue/koord-queue/test/performance/controller"
	"github.com/koord-queue/koord-queue/test/performance/generator"
	"github.com/koord-queue/koord-queue/test/performance/kube"
	"github.com/koord-queue/koord-queue/test/performance/scenario"
)

// startedLeadingMessage is the line koord-queue logs after a leader's
// first cycle, with where its start went (pkg/admission's Loop).
const startedLeadingMessage = "Started leading: where the time went"

// StartPhases is one leader's start as koord-queue logged it, in seconds.
type StartPhases struct {
	SinceProcessStart    float64 `json:"sinceProcessStartSeconds"`
	BeforeLeading        float64 `json:"beforeLeadingSeconds"`
	SinceLeading         float64 `json:"sinceLeadingSeconds"`
	List                 float64 `json:"listSeconds"`
	Rebuild              float64 `json:"rebuildSeconds"`
	FirstCycle           float64 `json:"firstCycleSeconds"`
	FirstCycleAdmissions float64 `json:"firstCycleAdmissions"`
}

// untilRebuilt is the time from the process's start until its Cache was
// rebuilt: no admission seen before then is this leader's.
func (p StartPhases) untilRebuilt() time.Duration {
	return seconds(p.SinceProcessStart - p.FirstCycle)
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// ReadStartPhases reads, in the order logged, every leader start in
// koord-queue's JSON log (its processes append to one file).
func ReadStartPhases(r io.Reader) ([]StartPhases, error) {
	var out []StartPhases
	scanner := bufio.NewScanner(r)
	scanner.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for scanner.Scan() {
		line := scanner.Bytes()
		if !strings.Contains(string(line), startedLeadingMessage) {
			continue
		}
		var p StartPhases
		if err := json.Unmarshal(line, &p); err != nil {
			return nil, fmt.Errorf("reading a leader's start from %q: %w", line, err)
		}
		out = append(out, p)
	}
	return out, scanner.Err()
}

// startsLogged is how many leader starts koord-queue's log holds.
func (r *run) startsLogged() (int, error) {
	f, err := os.Open(r.logPath())
	if err != nil {
		return 0, err
	}
	defer f.Close()
	all, err := ReadStartPhases(f)
	return len(all), err
}

// startPhasesLogged waits until koord-queue's log holds more than n leader
// starts, and returns the last.
func (r *run) startPhasesLogged(ctx context.Context, n int) (StartPhases, error) {
	ticker := time.NewTicker(100 * time.Millisecond)
	defer ticker.Stop()
	timeout := time.After(time.Minute)
	for {
		f, err := os.Open(r.logPath())
		if err != nil {
			return StartPhases{}, err
		}
		all, err := ReadStartPhases(f)
		f.Close()
		if err != nil {
			return StartPhases{}, err
		}
		if len(all) > n {
			return all[len(all)-1], nil
		}
		select {
		case <-ctx.Done():
			return StartPhases{}, ctx.Err()
		case <-timeout:
			return StartPhases{}, fmt.Errorf("koord-queue logged no leader's start (%q) within a minute", startedLeadingMessage)
		case <-ticker.C:
		}
	}
}

// waitAdmitted waits until n units have been admitted at least once.
func (r *run) waitAdmitted(ctx context.Context, n int) error {
	select {
	case <-r.recorder.WhenAdmitted(n):
		return nil
	case err := <-r.crashed:
		return err
	case <-ctx.Done():
		return fmt.Errorf("scenario %s: waiting for %d units admitted: %w (%s)", r.s.Name, n, ctx.Err(), r.recorder)
	}
}

// runFailover carries out a failover scenario: koord-queue makes the
// Queues and stops; the units are created in their states; koord-queue
// starts cold (a leader and, with a standby, a second replica once the
// leader admitted), its leader is killed once it admitted AdmitBeforeKill
// units, and the standby takes over, or one replica starts again; the run
// ends once the new leader admitted AdmitAfter units. Each leader's time
// from its start to its first admission is measured, and where its start
// went is read from its log.
func (r *run) runFailover(ctx context.Context) (*checker.Result, error) {
	f := r.s.Failover
	if r.opts.Mode == checker.ModeInProcess {
		return nil, errors.New("a failover scenario kills koord-queue: it runs as a binary only")
	}
	if r.opts.DashboardPollers > 0 && r.opts.Progress != nil {
		fmt.Fprintf(r.opts.Progress, "  %s: no dashboard pollers in a failover scenario\n", r.s.Name)
	}
	if r.opts.ScrapeInterval > 0 && r.opts.Progress != nil {
		fmt.Fprintf(r.opts.Progress, "  %s: no /metrics scrapes in a failover scenario\n", r.s.Name)
	}
	ctx, cancel := context.WithTimeout(ctx, r.s.Timeout)
	defer cancel()
	genClient, err := kube.Client(r.cfg, "perf-generator")
	if err != nil {
		return nil, err
	}
	if err := generator.Prepare(ctx, genClient, r.s); err != nil {
		return nil, err
	}
	r.recorder = checker.NewRecorder(r.s, time.Now(), r.s.Units())
	watchCtx, stopWatching := context.WithCancel(ctx)
	defer stopWatching()
	if err := r.watch(watchCtx); err != nil {
		return nil, err
	}
	res := &checker.Result{}
	extras := map[string]float64{}

	// koord-queue makes a Queue per quota, and stops before any unit.
	if err := r.startController(ctx); err != nil {
		return nil, err
	}
	if err := generator.CreateQuotas(ctx, genClient, r.s); err != nil {
		return nil, err
	}
	r.stopController(false)
	r.progress("creating %d units: %d finished, %d admitted, %d waiting", r.s.Units(), r.s.CountIn(scenario.Finished), r.s.CountIn(scenario.Admitted), r.s.CountIn(scenario.Waiting))
	preloadStart := time.Now()
	if err := generator.Preload(ctx, genClient, r.s); err != nil {
		return nil, err
	}
	if err := r.waitSeen(ctx); err != nil {
		return nil, err
	}
	extras["units created in their states (seconds)"] = time.Since(preloadStart).Seconds()

	var leaderArgs []string
	if f.Standby {
		leaderArgs = []string{"--leader-elect=true"}
	}
	// measure reads the start of the leader that logs after the logged
	// ones, and when it first admitted.
	measure := func(prefix string, logged int, procStart, killed time.Time) error {
		phases, err := r.startPhasesLogged(ctx, logged)
		if err != nil {
			return err
		}
		first, err := r.firstAdmissionAfter(ctx, procStart.Add(phases.untilRebuilt()))
		if err != nil {
			return fmt.Errorf("%s: %w", prefix, err)
		}
		from, fromName := procStart, "its process's start"
		if f.Standby && !killed.IsZero() {
			// A standby's process started long before it led.
			from, fromName = procStart.Add(seconds(phases.BeforeLeading)), "its leading"
		}
		toFirst := first.Sub(from).Seconds()
		extras[prefix+": seconds from "+fromName+" to its first admission"] = toFirst
		if !killed.IsZero() {
			extras[prefix+": seconds from the kill to its first admission"] = first.Sub(killed).Seconds()
		}
		extras[prefix+": seconds from its process's start to leading"] = phases.BeforeLeading
		extras[prefix+": seconds from its process's start to its informers' lists in their stores"] = phases.List
		extras[prefix+": seconds rebuilding the Cache (after the lists)"] = phases.Rebuild
		extras[prefix+": seconds of the first cycle"] = phases.FirstCycle
		extras[prefix+": admissions of the first cycle"] = phases.FirstCycleAdmissions
		limit := f.MaxToFirstAdmission
		res.Bounds = append(res.Bounds, checker.BoundResult{
			Name: prefix + ": " + fromName + " to its first admission", Want: fmt.Sprintf("≤ %.1fs", limit.Seconds()),
			Got: fmt.Sprintf("%.1fs", toFirst), OK: toFirst <= limit.Seconds(),
		})
		r.progress("%s: first admission %.1fs after %s (list %.1fs, rebuild %.1fs, first cycle %.2fs): %s", prefix, toFirst, fromName, phases.List, phases.Rebuild, phases.FirstCycle, r.recorder)
		return nil
	}

	// The cold start.
	_, admitted, _, _ := r.recorder.Counts()
	logged, err := r.startsLogged()
	if err != nil {
		return nil, err
	}
	coldStart := time.Now()
	if err := r.startController(ctx, leaderArgs...); err != nil {
		return nil, err
	}
	if err := r.waitAdmitted(ctx, admitted+1); err != nil {
		return nil, err
	}
	if err := measure("cold start", logged, coldStart, time.Time{}); err != nil {
		return nil, err
	}
	var standby *controller.Process
	if f.Standby {
		standbyStart := time.Now()
		args := append(slices.Clone(r.opts.ExtraArgs), leaderArgs...)
		standby, err = controller.Start(ctx, r.opts.Binary, r.kubeconfig, r.s.QPS, r.s.Burst, r.logPath(), args...)
		if err != nil {
			return nil, fmt.Errorf("starting the standby: %w (log in %s)", err, r.logPath())
		}
		r.watchCrash(standby)
		defer func() {
			if standby != nil {
				standby.Kill()
			}
		}()
		coldStart = standbyStart
	}
	if err := r.waitAdmitted(ctx, admitted+f.AdmitBeforeKill); err != nil {
		return nil, err
	}

	// The kill.
	created, admittedAtKill, _, _ := r.recorder.Counts()
	extras["units admitted at the kill"] = float64(admittedAtKill)
	extras["units waiting at the kill"] = float64(created - admittedAtKill - r.s.CountIn(scenario.Finished))
	if logged, err = r.startsLogged(); err != nil {
		return nil, err
	}
	r.progress("killing koord-queue's leader: %s", r.recorder)
	r.stopController(false)
	killed := time.Now()
	newStart := killed
	if f.Standby {
		r.mu.Lock()
		r.process, standby = standby, nil
		r.mu.Unlock()
		newStart = coldStart
	} else if err := r.startController(ctx); err != nil {
		return nil, fmt.Errorf("restarting koord-queue: %w", err)
	}
	if err := r.waitAdmitted(ctx, admittedAtKill+1); err != nil {
		return nil, err
	}
	if err := measure("new leader", logged, newStart, killed); err != nil {
		return nil, err
	}
	if err := r.waitAdmitted(ctx, admittedAtKill+f.AdmitAfter); err != nil {
		return nil, err
	}
	r.stopController(true)

	summary := r.recorder.Summarize(r.s)
	summary.Short, summary.Command = r.opts.Short, r.opts.Command
	summary.Controller = r.controllerStats(summary.WallSeconds)
	for name, v := range extras {
		addExtra(summary, name, v)
	}
	summary.Check(r.s.Bounds)
	summary.Bounds = append(summary.Bounds, res.Bounds...)
	return summary, nil
}

// firstAdmissionAfter waits for the first admission seen after t: one
// seen before is another leader's.
func (r *run) firstAdmissionAfter(ctx context.Context, t time.Time) (time.Time, error) {
	ticker := time.NewTicker(20 * time.Millisecond)
	defer ticker.Stop()
	for {
		if first, ok := r.recorder.FirstAdmissionAfter(t); ok {
			return first, nil
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("no admission seen after its Cache was rebuilt: %w (%s)", ctx.Err(), r.recorder)
		case err := <-r.crashed:
			return time.Time{}, err
		case <-ticker.C:
		}
	}
}

// waitSeen waits until the checker has seen every unit created, and the
// admitted and finished ones in their states.
func (r *run) waitSeen(ctx context.Context) error {
	ticker := time.NewTicker(100 * time.Millisecond)
	defer ticker.Stop()
	for {
		created, admitted, finished, _ := r.recorder.Counts()
		if created == r.s.Units() && admitted >= r.s.CountIn(scenario.Admitted) && finished >= r.s.CountIn(scenario.Finished) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting to see the units created: %w (%s)", ctx.Err(), r.recorder)
		case <-ticker.C:
		}
	}
}

// progress reports a line, if the run reports progress.
func (r *run) progress(format string, args ...any) {
	if r.opts.Progress != nil {
		fmt.Fprintf(r.opts.Progress, "  %s: %s\n", r.s.Name, fmt.Sprintf(format, args...))
	}
}
