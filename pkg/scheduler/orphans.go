package scheduler

// orphans are the units whose queue does not exist, by the queue they name.
// A Queue and its units come from different informers, so after a restart
// units are often delivered before their Queue, and a Queue may be deleted
// while its units live on. The scheduler keeps such units aside here, out
// of every queue's order and charged nowhere new, and hands them over when
// the queue comes (UpsertQueue): waiting ones are enqueued, admitted ones
// (which keep the charge they hold) are counted by it and gate it.
//
// It owns only the two sets; the units themselves stay in Scheduler.units.
type orphans struct {
	// waiting: units that wait for their queue, by queue name.
	waiting map[string]map[string]struct{}
	// admitted: units that hold quota while their queue does not exist,
	// by queue name.
	admitted map[string]map[string]struct{}
}

func newOrphans() orphans {
	return orphans{waiting: map[string]map[string]struct{}{}, admitted: map[string]map[string]struct{}{}}
}

// wait sets aside a waiting unit whose queue does not exist.
func (o *orphans) wait(us *unitState) { addKey(o.waiting, us.u.Queue, us.u.Key) }

// stopWaiting forgets a waiting unit set aside (if it was).
func (o *orphans) stopWaiting(us *unitState) { dropKey(o.waiting, us.u.Queue, us.u.Key) }

// adoptLater records an admitted unit whose queue does not exist, for the
// queue to count when it comes.
func (o *orphans) adoptLater(us *unitState) { addKey(o.admitted, us.u.Queue, us.u.Key) }

// released forgets an admitted unit set aside that no longer holds quota.
func (o *orphans) released(us *unitState) { dropKey(o.admitted, us.u.Queue, us.u.Key) }

// claim hands over the units set aside for queue, which now exists: the
// waiting ones by key (the order they are enqueued in), and the admitted
// ones.
func (o *orphans) claim(queue string) (waiting []string, admitted map[string]struct{}) {
	waiting, admitted = sortedKeys(o.waiting[queue]), o.admitted[queue]
	delete(o.waiting, queue)
	delete(o.admitted, queue)
	return waiting, admitted
}

// counts is how many units set aside for queue wait and how many hold quota.
func (o *orphans) counts(queue string) (pending, admitted int) {
	return len(o.waiting[queue]), len(o.admitted[queue])
}
