// Package admission connects the decision core (pkg/scheduler) to the API
// server. It is koord-queue's heart at run time:
//
//   - Cache: informer events (ElasticQuotas, Queues, QueueUnits, Nodes) are
//     translated into the core's plain structs under one mutex. Everything
//     is rebuilt from those events on start, so a restarted or newly elected
//     replica knows every admitted unit before it admits anything.
//   - Loop (leader only): runs scheduling cycles when an event could change
//     an answer, and at the one time the core asks to be woken
//     (Result.NextWakeup: a backoff or a reclaim protection ending, a
//     low-priority unit's maximum wait, an admitted unit's maximum execution
//     time ending: deadlines.go), and hands the decisions to the
//     Writer; it polls nothing.
//   - Each unit's record (record.go) holds its decisions until the API
//     server shows them: an admission decided and not yet written (counted
//     against the Writer's budget), an eviction to write.
//   - Writer: writes admissions and evictions first, then the reasons units
//     wait (rate-limited, latest reason only, and only when it changed), so
//     a large backlog never starves admissions of API quota. What a unit
//     is owed of the latter is its record's level, in the order owed
//     (owed.go); a deferred write whose turn comes while urgent writes
//     wait checks again every 250 ms (deferredRetry), on the injected clock.
//   - Admission checks, kept level-based. The Queue status is written by
//     pkg/queue's StatusWriter from what the Cache gives (statusreads.go).
//   - Koord-Queue v1.8's metrics (v18metrics.go): read from the Cache when
//     scraped, on the leader.
//
// Every replica keeps a warm Cache, so followers serve the visibility API.
package admission
