package scheduler

import (
	"sort"

	"github.com/koord-queue/koord-queue/pkg/policy"
	"github.com/koord-queue/koord-queue/pkg/quota"
)

// widened converts the units' requests again after quotas or the cluster's
// capacity named resources the engine did not count before (its width was
// width): what units hold and ask of those resources counts from now on.
// Vectors made before are zero in them, so only units asking for one change.
// Every unit keeps its whole request (us.u), so nothing is lost when a
// request is converted: a name nothing names is left out, not forgotten.
func (s *Scheduler) widened(width int) {
	if s.engine.Len() == width {
		return
	}
	type vectors struct {
		req, need quota.Vector
		sets      *podSets
	}
	var keys []string
	fresh := map[string]vectors{}
	for key, us := range s.units {
		u := us.u
		u.Admitted = us.admitted
		var v vectors
		v.req, v.need, v.sets = s.sizer.vectors(u)
		if isZeroFrom(v.req, width) && isZeroFrom(v.need, width) {
			continue
		}
		keys = append(keys, key)
		fresh[key] = v
	}
	sort.Strings(keys) // errors come out in a fixed order
	for _, key := range keys {
		us, v := s.units[key], fresh[key]
		req, need := v.req, v.need
		us.sets = v.sets
		if us.admitted {
			// It keeps what it held of the resources counted before (an
			// admitted unit that grew keeps its old charge), and now holds
			// what it asks of the new ones.
			held := keep(us.req, req)
			if err := s.engine.Resize(key, held); err != nil {
				s.turns.errs = append(s.turns.errs, UnitError{Unit: key, Queue: us.u.Queue, Err: bookkeeping(err)})
				continue
			}
			us.req, us.need = held, held
			continue
		}
		if !us.inQueue {
			us.req, us.need = req, need
			continue
		}
		s.engine.AddPending(us.quota, req) // first, so the quota's node stays
		s.engine.RemovePending(us.quota, us.req)
		us.req, us.need = req, need
		if qs, ok := s.queues[us.u.Queue]; ok {
			qs.q.Upsert(policy.Item{Key: key, Priority: us.u.Priority, EnqueueTime: us.u.EnqueueTime, Request: us.need})
			if p := qs.patient; p != nil && p != us && qs.q.Position(key) < qs.q.Position(p.u.Key) {
				s.preemption.unitChanged(p, patienceOver) // it no longer heads the queue
			}
		}
	}
}

// isZeroFrom reports whether v is zero from index i on.
func isZeroFrom(v quota.Vector, i int) bool {
	for ; i < len(v); i++ {
		if v[i] != 0 {
			return false
		}
	}
	return true
}

// keep is fresh with old's amounts where old has them.
func keep(old, fresh quota.Vector) quota.Vector {
	out := append(quota.Vector(nil), fresh...)
	copy(out, old)
	return out
}
