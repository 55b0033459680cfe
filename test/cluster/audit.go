package cluster

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		return nil, fmt.Errorf("writing the audit policy: %w", err)
	}
	return []string{
		"--audit-policy-file=" + policy,
		"--audit-log-path=" + logPath,
		"--audit-log-format=json",
		"--audit-log-maxsize=0", // never rotated: the count is of the whole run
	}, nil
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

// WritesBy counts the writes in the audit log at path made by the client
// whose user agent is program, or program's client-go default
// ("<program>/<version> (<os>/<arch>) ...").
func WritesBy(path, program string) (map[Write]int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening the audit log: %w", err)
	}
	defer f.Close()
	counts := map[Write]int{}
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for s.Scan() {
		var e auditEvent
		if err := json.Unmarshal(s.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		if e.Stage != "ResponseComplete" || e.ObjectRef == nil || (e.UserAgent != program && !strings.HasPrefix(e.UserAgent, program+"/")) {
			continue
		}
		w := Write{Verb: e.Verb, Resource: e.ObjectRef.Resource}
		if e.ObjectRef.Subresource != "" {
			w.Resource += "/" + e.ObjectRef.Subresource
		}
		if e.ResponseStatus != nil {
			w.Code = e.ResponseStatus.Code
		}
		counts[w]++
	}
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return counts, nil
}
