// Package admission connects the decision core (pkg/scheduler) to the API
// server. It is koord-queue's heart at run time:
//
//   - Cache: informer events (ElasticQuotas, Queues, QueueUnits, Nodes) are
//     translated into the core's plain structs under one mutex. Everything
//     is rebuilt from those events on start, so a restarted or newly elected
//     replica knows every admitted unit before it admits anything.
//   - Loop (leader only): runs scheduling cycles when an event could change
//     an answer, never on a timer, and hands the decisions to the Writer.
//   - Writer: writes admissions and evictions first, then the reasons units
//     wait (rate-limited, latest reason only, and only when it changed), so
//     a large backlog never starves admissions of API quota.
//   - Queue status and admission checks, kept level-based.
//
// Every replica keeps a warm Cache, so followers serve the visibility API.
package admission
