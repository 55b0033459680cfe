package cluster

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// auditPolicy logs every write at the Metadata level (who, what, the
// answer) and nothing else: enough to count each client's writes by
// resource, cheap enough not to slow the API server.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived, ResponseStarted]
rules:
- level: Metadata
  verbs: [create, update, patch, delete, deletecollection]
- level: None
`

// auditBodiesPolicy logs, besides, the request body of every write to an
// Event or a QueueUnit (small objects and merge patches), so that a write
// can be told by what it wrote: an Event by its reason, a status write by
// whether it admitted, evicted or explained.
const auditBodiesPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived, ResponseStarted]
rules:
- level: Request
  verbs: [create, update, patch]
  resources:
  - group: ""
    resources: [events]
  - group: events.k8s.io
    resources: [events]
  - group: scheduling.x-k8s.io
    resources: [queueunits, queueunits/status]
- level: Metadata
  verbs: [create, update, patch, delete, deletecollection]
- level: None
`

// auditFlags writes the policy into dir and returns the API server
// flags that log writes to the cluster's audit log.
func (c *Cluster) auditFlags(dir string) ([]string, error) {
	if !c.opts.AuditWrites {
		return nil, nil
	}
	return AuditFlags(dir, c.AuditLog())
}

// AuditFlags writes the policy that logs every write (and nothing else)
// into dir and returns the kube-apiserver flags that log them to logPath,
// for WritesBy: what Options.AuditWrites adds, for API servers started
// otherwise (the performance harness's envtest, Kueue's runner's).
func AuditFlags(dir, logPath string) ([]string, error) {
	return auditFlags(dir, logPath, auditPolicy)
}

// AuditFlagsWithBodies is AuditFlags with the request bodies of the writes
// to Events and QueueUnits logged as well, for a breakdown of the writes by
// what they wrote; it costs the API server more than AuditFlags.
func AuditFlagsWithBodies(dir, logPath string) ([]string, error) {
	return auditFlags(dir, logPath, auditBodiesPolicy)
}

func auditFlags(dir, logPath, text string) ([]string, error) {
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(text), 0o600); err != nil {
		return nil, fmt.Errorf("writing the audit policy: %w", err)
	}
	return []string{
		"--audit-policy-file=" + policy,
		"--audit-log-path=" + logPath,
		"--audit-log-format=json",
		// Rotated every 100 MB whatever --audit-log-maxsize says (0 is
		// lumberjack's default, 100), with every backup kept: WritesBy reads
		// them (AuditLogFiles).
	}, nil
}

// rotatedTime is how lumberjack, which writes kube-apiserver's audit log,
// stamps a backup's name: <name>-<time><ext>, beside the log.
const rotatedTime = "2006-01-02T15-04-05.000"

// AuditLogFiles are the audit log at path and the backups the API server
// rotated it into, oldest first, as far as they exist (none: no log was
// written there). kube-apiserver rotates its audit log every
// --audit-log-maxsize megabytes, and every 100 when that is 0, keeping
// every backup unless --audit-log-maxbackup or --audit-log-maxage say
// otherwise: a count of the log alone misses what was written before the
// last rotation (a large-scale run's log rotates after about 100,000
// writes).
func AuditLogFiles(path string) ([]string, error) {
	dir, base := filepath.Split(path)
	ext := filepath.Ext(base)
	prefix := strings.TrimSuffix(base, ext) + "-"
	entries, err := os.ReadDir(filepath.Clean(dir))
	if err != nil {
		return nil, fmt.Errorf("listing the audit logs beside %s: %w", path, err)
	}
	var files []string
	for _, e := range entries { // ReadDir sorts by name: by time, for backups
		name := e.Name()
		stamp, ok := strings.CutPrefix(name, prefix)
		if !ok || !strings.HasSuffix(stamp, ext) {
			continue
		}
		if _, err := time.Parse(rotatedTime, strings.TrimSuffix(stamp, ext)); err == nil {
			files = append(files, filepath.Join(dir, name))
		}
	}
	if _, err := os.Stat(path); err == nil {
		files = append(files, path)
	}
	return files, nil
}

// RemoveAuditLogs removes the audit log at path and its backups
// (AuditLogFiles).
func RemoveAuditLogs(path string) error {
	files, err := AuditLogFiles(path)
	if err != nil {
		return err
	}
	for _, f := range files {
		if err := os.Remove(f); err != nil {
			return fmt.Errorf("removing the audit log: %w", err)
		}
	}
	return nil
}

// AuditLog is the file the API server logs writes to with
// Options.AuditWrites.
func (c *Cluster) AuditLog() string { return filepath.Join(c.logDir, "audit.log") }

// A Write is one kind of write the audit log recorded.
type Write struct {
	// Verb is the API verb: create, update, patch, delete.
	Verb string
	// Resource is the resource, with "/subresource" when there is one
	// ("queueunits/status").
	Resource string
	// Code is the HTTP status of the answer (409 for a conflict).
	Code int
}

func (w Write) String() string { return fmt.Sprintf("%s %s %d", w.Verb, w.Resource, w.Code) }

// auditEvent is the part of an audit.k8s.io/v1 Event that WritesBy reads.
type auditEvent struct {
	Stage     string `json:"stage"`
	Verb      string `json:"verb"`
	UserAgent string `json:"userAgent"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

// WritesBy counts the writes in the audit log at path, and in the backups
// it was rotated into (AuditLogFiles), made by the client whose user agent
// is program, or program's client-go default ("<program>/<version>
// (<os>/<arch>) ...").
func WritesBy(path, program string) (map[Write]int, error) {
	files, err := AuditLogFiles(path)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no audit log at %s", path)
	}
	counts := map[Write]int{}
	for _, file := range files {
		if err := countWrites(counts, file, program); err != nil {
			return nil, err
		}
	}
	return counts, nil
}

// countWrites adds the writes of program that one audit log file holds.
func countWrites(counts map[Write]int, path, program string) error {
	return ScanAuditLog(path, func(line []byte) error {
		userAgent, w, ok, err := ParseAuditWrite(line)
		if err != nil || !ok || (userAgent != program && !strings.HasPrefix(userAgent, program+"/")) {
			return err
		}
		counts[w]++
		return nil
	})
}

// ParseAuditWrite reads one event of the audit log: the writer's user agent
// and what it wrote. ok is false for an event that is not a completed
// request on a resource.
func ParseAuditWrite(line []byte) (userAgent string, w Write, ok bool, err error) {
	var e auditEvent
	if err := json.Unmarshal(line, &e); err != nil {
		return "", Write{}, false, err
	}
	if e.Stage != "ResponseComplete" || e.ObjectRef == nil {
		return "", Write{}, false, nil
	}
	w = Write{Verb: e.Verb, Resource: e.ObjectRef.Resource}
	if e.ObjectRef.Subresource != "" {
		w.Resource += "/" + e.ObjectRef.Subresource
	}
	if e.ResponseStatus != nil {
		w.Code = e.ResponseStatus.Code
	}
	return e.UserAgent, w, true, nil
}

// ScanAuditLog calls each with every line (one event) of the audit log file
// at path, in order, and stops at the first error, which it returns naming
// the file. Lines may be as long as the request bodies a policy records.
func ScanAuditLog(path string, each func(line []byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("opening the audit log: %w", err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for s.Scan() {
		if err := each(s.Bytes()); err != nil {
			return fmt.Errorf("reading %s: %w", path, err)
		}
	}
	if err := s.Err(); err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	return nil
}
