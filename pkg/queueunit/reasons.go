package queueunit

import schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"

// Reasons of the conditions on a QueueUnit. koord-queue writes the first
// group (QuotaReserved, Admitted, Evicted); koord-queue-controllers the
// second (Finished, PodsReady). The Evicted reasons are API
// (schedulingv1alpha1.EvictedBy*), since users and admission checks read them.
const (
	ReasonQuotaReserved          = "QuotaReserved"
	ReasonAdmitted               = "Admitted"
	ReasonAdmissionChecksPending = "AdmissionChecksPending"
	ReasonAdmissionCheckRetry    = "AdmissionCheckRetry"
	ReasonAdmissionCheckRejected = "AdmissionCheckRejected"
	ReasonReadmitted             = "Readmitted"

	ReasonSucceeded      = "Succeeded"
	ReasonFailed         = "Failed"
	ReasonPodsReady      = "PodsReady"
	ReasonWaitingForPods = "WaitingForPods"
)

// Reasons of the events koord-queue records on QueueUnits.
const (
	EventScheduled        = "Scheduled"
	EventFailedScheduling = "FailedScheduling"
	EventQueueNotFound    = "QueueNotFound"
	EventPreempted        = "Preempted"
	EventAdmissionCheck   = "AdmissionCheck"
	// EventMaximumExecutionTimeExceeded: the unit ran past
	// spec.maximumExecutionTimeSeconds and was deactivated and evicted.
	EventMaximumExecutionTimeExceeded = schedulingv1alpha1.EvictedByMaximumExecutionTimeExceeded
)
