package scheduler

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/koord-queue/koord-queue/pkg/policy"
)

// QueueSpec is one Queue as the scheduler needs it.
type QueueSpec struct {
	// Name of the Queue (in namespace koord-queue).
	Name string
	// Quota is the ElasticQuota the queue's units are charged to; empty
	// means the quota named like the queue, as Koord-Queue creates them.
	Quota string
	// Priority orders queues whose shares are equal; higher first. It
	// outranks the priority of the queues' heads, which orders queues
	// whose shares and Priority are equal (line.go).
	Priority int32
	// Config is the queue's policy and tuning (policy.ConfigFromQueue).
	Config policy.Config
}

// Unit is one QueueUnit as the scheduler needs it. (Its four flags follow
// Priority, in the room its alignment leaves: the scheduler keeps a Unit
// per unit, and a forecast another.)
type Unit struct {
	// Key is namespace/name.
	Key string
	// Queue is the queue the unit waits in.
	Queue string
	// Priority orders units in the queue; higher first.
	Priority int32
	// Admitted is true while the unit holds quota: from admission until it
	// finishes, fails, is deleted, or is evicted and its pods are gone.
	Admitted bool
	// Running is true once the unit's pods run: all of them, on nodes
	// (queueunit.FullyRunning), for wait-for-pods-running.
	Running bool
	// HeldByPods, on an admitted unit, says its Request is what its pods
	// hold on nodes: more than it was admitted with (pods grown or added
	// past its admission), or what it holds once its admission is given
	// back while its pods are still there. The core charges it as given,
	// grown or shrunk, without a fit check: the pods hold it already.
	HeldByPods bool
	// Leaving, on an admitted unit, says it gave its admission back
	// (finished, evicted or deleted) and is charged (HeldByPods) only
	// until its pods are gone: evicting it would free nothing sooner, so
	// it is never a victim.
	Leaving bool
	// Request is the unit's total request (resources.PodSetsRequests, or
	// spec.resource). The scheduler keeps the list it is given, unchanged
	// and uncopied (at 50,000 units a copy was 690 bytes each): the caller
	// must not change it afterwards, as an informer's objects are never
	// changed.
	Request corev1.ResourceList
	// PodSets are the unit's groups of identical pods, needed only for
	// partial admission: a unit with a pod set whose MinCount is below its
	// Count may be admitted with fewer pods when it does not fit whole.
	// They must add up to Request (count times pod request); if they do not,
	// the unit is admitted whole. Empty: whole or not at all.
	PodSets []PodSet
	// Partial, for an admitted unit, is the pods each pod set holds that was
	// admitted with fewer than its Count (Admission.Partial), by name; the
	// unit holds what those pods and its other pod sets' ask for. nil: it
	// holds its whole Request.
	Partial map[string]int32
	// EnqueueTime is when the unit first entered the queue (its creation).
	EnqueueTime time.Time
	// NotRunning says what an admitted unit that is not Running lacks, such
	// as "pod set main has 1 of 2 pods scheduled", for the wait reason of
	// the queue it holds shut.
	NotRunning string
	// AdmitTime is when it was admitted, for units restored as Admitted;
	// zero means EnqueueTime. Victims are taken most recently admitted first.
	AdmitTime time.Time
}

// PodSet is a group of identical pods of a unit.
type PodSet struct {
	Name string
	// Count is how many pods the set asks for.
	Count int32
	// MinCount, from 1 to Count-1, is the fewest pods the set can start
	// with (partial admission); any other value: all of them.
	MinCount int32
	// PodRequest is what one of its pods asks for (resources.PodRequests).
	PodRequest corev1.ResourceList
}

// Result is what one cycle decided.
type Result struct {
	// Admissions to write, in the order decided. Their quota is already
	// reserved.
	Admissions []Admission
	// Preemptions: victims to suspend. Their quota stays held until the
	// controller reports each of them gone.
	Preemptions []Preemption
	// Waits: units that were considered and wait, with why. A unit is
	// listed only when its reason changed, so the controller writes status
	// only then. WaitReason answers for any unit at any time.
	Waits []Wait
	// NextWakeup, when not zero, is when a time-based rule (Intelligent's
	// starvation protection) next changes an answer: call Cycle then.
	NextWakeup time.Time
	// More is true when events during this cycle left work for another
	// cycle (for example a quota owed capacity that was just borrowed).
	More bool
	// Errors: the quota engine refused a charge that the scheduler's own
	// records say is valid, in this cycle or in a call since the last one
	// that could not return it (DeleteUnit, ForgetAdmission, a victim
	// leaving). Each wraps ErrBookkeeping: a bug, never a user's mistake,
	// for the controller to log. A unit whose admission was refused is not
	// in Admissions: it keeps its place and waits, and WaitReason says why.
	Errors []UnitError
}

// UnitError is a quota engine failure met on a unit's behalf.
type UnitError struct {
	Unit  string
	Queue string
	Err   error
}

// Admission admits Unit from Queue, charged to Quota.
type Admission struct {
	Unit  string
	Queue string
	Quota string
	// Partial: the unit did not fit whole and is admitted with fewer pods,
	// this many of each pod set that gives some up, by name. nil: whole.
	Partial map[string]int32
}

// Kind of a preemption.
type PreemptionKind string

// Preemption kinds.
const (
	// Reclaim takes back a quota's lent min from quotas above their min.
	Reclaim PreemptionKind = "Reclaim"
	// InQueue evicts lower-priority units of the preemptor's own quota
	// (enable-queueunit-preemption).
	InQueue PreemptionKind = "InQueue"
)

// Preemption evicts Victims so that Preemptor fits.
type Preemption struct {
	Preemptor string
	Queue     string
	Kind      PreemptionKind
	Victims   []string
	// Reason, for the victims' status and events: render it for each
	// victim's namespace (Text.For), so that it names no unit of another.
	Reason Text
}

// Wait says why Unit is not admitted.
type Wait struct {
	Unit   string
	Queue  string
	Reason string
}

// PendingUnit is a waiting unit's place in its queue, for Queue status and
// the visibility API.
type PendingUnit struct {
	Key      string
	Priority int32
	// Position is 1-based.
	Position int
}
