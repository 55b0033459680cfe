// Package framework is what every job framework shares: the GenericJob
// interface that a framework's adapter implements, and the one reconciler
// that turns any such job into a QueueUnit, releases the job when the queue
// admits its unit, suspends it again when the unit is evicted, and keeps the
// unit's status true to the job's life.
//
// It follows Kueue's jobframework: an adapter only says what its job is
// (suspended or not, its pod sets, finished or not, how many pods run); the
// reconciler decides what to do. Abilities only some frameworks have are
// extra small interfaces checked with a type assertion.
//
// The reconciler and the queue controller meet only through QueueUnits. The
// reconciler creates a unit, keeps its spec in step with a job that waits in
// the queue, and writes these status fields and no others:
//
//   - phase: Enqueued on a unit with no phase; Running once an admitted
//     unit's job runs pods; Succeed or Failed when the job ends;
//   - lastUpdateTime, when it changes the phase;
//   - podState, from the job's status; admissions[].running, the job's
//     pods with a node assigned, read from the pods themselves (pods.go);
//   - admissions, cleared when the job ends, and when an evicted unit (phase
//     Enqueued) has its job suspended with no pods left;
//   - conditions PodsReady (every pod set has all its pods on nodes) and
//     Finished;
//   - message, at creation and when the job ends, and, while the job cannot
//     be queued as it is (AnnotationInvalidJob), why, cleared once it is fixed.
//
// On the job it writes only its suspension (a managed job found running
// without a unit, submitted so or with its unit lost, is suspended in the
// pass that creates its unit), its release with the koord-queue/released-by
// annotation, the pod templates' admission-check updates and their
// restoration, and what unlocks its templates (a batch Job's start time).
//
// Every write is a merge patch guarded by the object's resourceVersion; a
// unit's status is read again and retried on conflict, so the reconciler
// never overwrites what the queue controller wrote in between.
package framework
