// Package queueunit is the QueueUnit contract both binaries share: which
// phases hold quota, let the job run, hold it back or end it, and what a
// unit asks for. koord-queue (pkg/admission) and koord-queue-controllers
// (pkg/extensions) meet only through QueueUnit objects, so they read them
// through this one package, as Kueue keeps its Workload rules in
// pkg/workload. It is pure: no client, no clock.
package queueunit
