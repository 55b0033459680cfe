package admission

import (
	"fmt"
	"strings"

	"github.com/koord-queue/koord-queue/pkg/queueunit"
)

// Why a unit waits, as the visibility API shows it and the Writer writes
// it in the unit's status: the views read it from the unit's record, the
// Cache's Queues and quotas, and the core.

// waitReason is why a unit waits now, or its problem, or "".
func (c *views) waitReason(key string) string {
	reason, _ := c.waitReasonAndTurn(key)
	return reason
}

// waitReasonAndTurn is waitReason, and whether the unit only waits its
// turn behind others in its queue (scheduler.WaitText.Behind).
func (c *views) waitReasonAndTurn(key string) (reason string, behind bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.units[key]
	if !ok {
		return "", false
	}
	if r.problem != "" {
		return r.problem, false
	}
	if !r.inCore || queueunit.HoldsQuota(r.unit) || r.admission != nil {
		return "", false
	}
	if _, ok := c.queues[r.queue]; !ok {
		if c.quotas.Exists(r.queue) {
			reason = fmt.Sprintf("waiting for Queue %s/%s to be created for ElasticQuota %s", c.queueNamespace, r.queue, r.queue)
		} else {
			reason = fmt.Sprintf("ElasticQuota %s not found: the unit is admitted as soon as it exists", r.queue)
		}
	} else {
		text := c.core.WaitReasonText(key)
		ns, _, _ := strings.Cut(key, "/")
		reason, behind = text.For(ns), text.Behind()
	}
	if reason != "" && !r.rule.Named() {
		reason += " (" + r.rule.Describe(r.queue) + ")"
	}
	return reason, behind
}

// waitReasonAndQueueNotFound is waitReasonAndTurn, and whether the reason
// is that no quota or queue serves the unit.
func (c *views) waitReasonAndQueueNotFound(key string) (reason string, noQueue, behind bool) {
	reason, behind = c.waitReasonAndTurn(key)
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.units[key]
	if !ok {
		return reason, false, behind
	}
	_, queueExists := c.queues[r.queue]
	return reason, !queueExists && !queueunit.HoldsQuota(r.unit), behind
}

// firstQueueNotFound reports true once per unit, so QueueNotFound is raised once.
func (c *views) firstQueueNotFound(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.units[key]
	if !ok || r.warnedNoQueue {
		return false
	}
	r.warnedNoQueue = true
	return true
}
