package checker

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/koord-queue/koord-queue/test/cluster"
)

// KoordQueueAgent is the user agent of koord-queue's client, as a binary
// (client-go's default, "koord-queue/<version> ...") and in-process.
const KoordQueueAgent = "koord-queue"

// Writes are a run's API writes, from the API server's audit log
// (cluster.AuditFlagsWithBodies): every write request, answered with
// success or not, by every client.
type Writes struct {
	// Agent is the controller's user agent; Admissions its admissions
	// plus evictions.
	Agent      string `json:"agent"`
	Admissions int    `json:"admissions"`
	// Controller counts the controller's writes; PerAdmission is
	// Controller over Admissions, the figure compared with Kueue's.
	Controller   int     `json:"controller"`
	PerAdmission float64 `json:"perAdmission"`
	// Kinds break every client's writes down, koord-queue's first, then
	// most first.
	Kinds []WriteKind `json:"kinds"`
}

// WriteKind is one kind of write, and how many were made.
type WriteKind struct {
	// User is the client's program: its user agent up to the first "/".
	User string `json:"user"`
	Verb string `json:"verb"`
	// Resource has "/subresource" when there is one ("queueunits/status").
	Resource string `json:"resource"`
	// Code is the HTTP status of the answer (409: a conflict).
	Code int `json:"code"`
	// What the write was for, where its body says: an Event's reason, and
	// for a QueueUnit what it wrote (WriteAdmission, ...).
	What  string `json:"what,omitempty"`
	Count int    `json:"count"`
}

// What a write to a QueueUnit wrote (WriteKind.What).
const (
	WriteAdmission    = "admission"
	WriteEviction     = "eviction"
	WriteWaitMessage  = "wait message"
	WriteChecksPassed = "checks passed"
	WriteChecksFailed = "checks failed"
	WriteFinished     = "finished"
	WriteQueueName    = "spec.queue"
	WriteDeactivate   = "spec.active"
)

// auditEntry is the part of an audit.k8s.io/v1 Event that CountWrites reads.
type auditEntry struct {
	Stage     string `json:"stage"`
	Verb      string `json:"verb"`
	UserAgent string `json:"userAgent"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestObject json.RawMessage `json:"requestObject"`
}

// CountWrites breaks down the writes in the audit log at path and its
// rotated backups: those of the client whose user agent is controller
// (or starts with controller+"/"), over admissions (admissions plus
// evictions), and every other client's.
func CountWrites(path, controller string, admissions int) (*Writes, error) {
	files, err := cluster.AuditLogFiles(path)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no audit log at %s", path)
	}
	c := writeCounter{counts: map[WriteKind]int{}, eventReasons: map[string]string{}}
	for _, file := range files {
		if err := c.read(file); err != nil {
			return nil, err
		}
	}
	w := &Writes{Agent: controller, Admissions: admissions}
	for k, n := range c.counts {
		k.Count = n
		if k.User == controller {
			w.Controller += n
		}
		w.Kinds = append(w.Kinds, k)
	}
	if admissions > 0 {
		w.PerAdmission = float64(w.Controller) / float64(admissions)
	}
	slices.SortFunc(w.Kinds, func(a, b WriteKind) int {
		if (a.User == controller) != (b.User == controller) {
			if a.User == controller {
				return -1
			}
			return 1
		}
		if a.Count != b.Count {
			return b.Count - a.Count
		}
		return strings.Compare(fmt.Sprint(a), fmt.Sprint(b))
	})
	return w, nil
}

type writeCounter struct {
	counts map[WriteKind]int
	// eventReasons are the reasons of the Events created, by namespace and
	// name: a later patch of one (its count) says no reason of its own.
	eventReasons map[string]string
}

func (c *writeCounter) read(path string) error {
	return cluster.ScanAuditLog(path, func(line []byte) error {
		var e auditEntry
		if err := json.Unmarshal(line, &e); err != nil {
			return err
		}
		if e.Stage != "ResponseComplete" || e.ObjectRef == nil {
			return nil
		}
		k := WriteKind{User: program(e.UserAgent), Verb: e.Verb, Resource: e.ObjectRef.Resource}
		if e.ObjectRef.Subresource != "" {
			k.Resource += "/" + e.ObjectRef.Subresource
		}
		if e.ResponseStatus != nil {
			k.Code = e.ResponseStatus.Code
		}
		k.What = c.what(&e, k.Resource)
		c.counts[k]++
		return nil
	})
}

// program is the user agent's program: client-go's default is
// "<program>/<version> (<os>/<arch>) kubernetes/<commit>".
func program(agent string) string {
	p, _, _ := strings.Cut(agent, "/")
	return p
}

// what says what a write was for, from its body.
func (c *writeCounter) what(e *auditEntry, resource string) string {
	if len(e.RequestObject) == 0 {
		return ""
	}
	switch resource {
	case "events":
		key := e.ObjectRef.Namespace + "/" + e.ObjectRef.Name
		var ev struct {
			Metadata struct {
				Namespace string `json:"namespace"`
				Name      string `json:"name"`
			} `json:"metadata"`
			Reason string `json:"reason"`
		}
		if json.Unmarshal(e.RequestObject, &ev) != nil {
			return ""
		}
		if e.Verb == "create" && ev.Metadata.Name != "" {
			key = e.ObjectRef.Namespace + "/" + ev.Metadata.Name
		}
		if ev.Reason != "" {
			c.eventReasons[key] = ev.Reason
			return ev.Reason
		}
		return c.eventReasons[key]
	case "queueunits/status":
		return statusWhat(e.RequestObject)
	case "queueunits":
		return mainWhat(e.RequestObject)
	}
	return ""
}

// statusWhat says what a QueueUnit status write (a merge patch, or the
// whole object) wrote, as koord-queue's transitions write it
// (pkg/queueunit).
func statusWhat(body json.RawMessage) string {
	var obj struct {
		Status map[string]json.RawMessage `json:"status"`
	}
	if json.Unmarshal(body, &obj) != nil || obj.Status == nil {
		return ""
	}
	var phase string
	_ = json.Unmarshal(obj.Status["phase"], &phase)
	var conditions []struct {
		Type   string `json:"type"`
		Status string `json:"status"`
	}
	_ = json.Unmarshal(obj.Status["conditions"], &conditions)
	evicted := slices.ContainsFunc(conditions, func(c struct {
		Type   string `json:"type"`
		Status string `json:"status"`
	}) bool {
		return c.Type == "Evicted" && c.Status == "True"
	})
	_, admissions := obj.Status["admissions"]
	_, requeue := obj.Status["requeueState"]
	switch {
	case phase == "Succeed" || phase == "Failed":
		return WriteFinished
	case evicted && phase == "Enqueued":
		return WriteEviction
	case (phase == "Dequeued" || phase == "Reserved") && admissions:
		return WriteAdmission
	case phase == "Dequeued":
		return WriteChecksPassed
	case requeue && phase == "Enqueued":
		return WriteChecksFailed
	}
	for key := range obj.Status {
		if key != "message" && key != "phase" {
			return "other"
		}
	}
	return WriteWaitMessage
}

// mainWhat says what a write of a QueueUnit's spec wrote.
func mainWhat(body json.RawMessage) string {
	var obj struct {
		Spec map[string]json.RawMessage `json:"spec"`
	}
	if json.Unmarshal(body, &obj) != nil || len(obj.Spec) != 1 {
		return ""
	}
	switch {
	case obj.Spec["queue"] != nil:
		return WriteQueueName
	case obj.Spec["active"] != nil:
		return WriteDeactivate
	}
	return ""
}

// Text is the breakdown a person reads: koord-queue's writes kind by kind,
// each with its share per admission, then the other clients' by resource.
func (w *Writes) Text() string {
	controller, admissions := w.Agent, w.Admissions
	var b strings.Builder
	fmt.Fprintf(&b, "  %s's API writes: %d, %.3f per admission (%d admissions and evictions)\n", controller, w.Controller, w.PerAdmission, admissions)
	others := map[string]int{}
	var order []string
	for _, k := range w.Kinds {
		if k.User != controller {
			key := fmt.Sprintf("%s %s %s", k.User, k.Verb, k.Resource)
			if _, ok := others[key]; !ok {
				order = append(order, key)
			}
			others[key] += k.Count
			continue
		}
		what := ""
		if k.What != "" {
			what = " (" + k.What + ")"
		}
		per := 0.0
		if admissions > 0 {
			per = float64(k.Count) / float64(admissions)
		}
		fmt.Fprintf(&b, "    %7d  %.3f  %s %s %d%s\n", k.Count, per, k.Verb, k.Resource, k.Code, what)
	}
	if len(order) > 0 {
		parts := make([]string, 0, len(order))
		for _, key := range order {
			parts = append(parts, fmt.Sprintf("%s %d", key, others[key]))
		}
		fmt.Fprintf(&b, "  other clients' writes: %s\n", strings.Join(parts, ", "))
	}
	return b.String()
}
