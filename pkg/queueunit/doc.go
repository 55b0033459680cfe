// Package queueunit is the QueueUnit contract both binaries share: which
// phases hold quota, let the job run, hold it back or end it (phase.go);
// what a unit asks for; every status transition either binary makes, as
// pure functions (transitions.go); the reasons of its conditions and events
// (reasons.go); and the rules every write of a unit keeps (write.go:
// BeforeWrite, which pkg/patch, the one way to write a unit, applies).
// koord-queue (pkg/admission) and koord-queue-controllers
// (pkg/extensions) meet only through QueueUnit objects, so they read and
// change them through this one package, as Kueue keeps its Workload rules
// in pkg/workload.
package queueunit
