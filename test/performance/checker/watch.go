package checker

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	toolscache "k8s.io/client-go/tools/cache"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/test/performance/kube"
)

// Watch feeds the Recorder every change to the units lw lists and watches,
// stamped with the time it arrived, until ctx ends; it returns once the
// first list is recorded.
//
// A reflector feeds it, not an informer, so that a relist (after a watch
// ends with an error) reaches the ledger as one list: an informer hands a
// relist's units over one by one in key order, and a ledger fed in that
// order can charge a unit admitted while the watch was down before it
// releases another that finished before that admission: a moment over a
// max that never was.
func (r *Recorder) Watch(ctx context.Context, lw toolscache.ListerWatcher) error {
	store := newLedgerStore(r, time.Now)
	reflector := toolscache.NewReflectorWithOptions(lw, &schedulingv1alpha1.QueueUnit{}, store, toolscache.ReflectorOptions{Name: "perf-checker"})
	go reflector.RunWithContext(ctx)
	select {
	case <-store.listed:
		return nil
	case <-time.After(time.Minute):
		return fmt.Errorf("checker: QueueUnits not listed within a minute")
	case <-ctx.Done():
		return fmt.Errorf("checker: listing QueueUnits: %w", ctx.Err())
	}
}

// ledgerStore is the reflector's store: it keeps no objects, only which
// units exist, and passes each change to the Recorder.
type ledgerStore struct {
	recorder *Recorder
	now      func() time.Time
	// known are the keys of the units that exist, as last listed or watched;
	// only the reflector's goroutine reads and writes it.
	known      map[string]bool
	listed     chan struct{}
	listedOnce sync.Once
}

var _ toolscache.ReflectorStore = &ledgerStore{}

func newLedgerStore(r *Recorder, now func() time.Time) *ledgerStore {
	return &ledgerStore{recorder: r, now: now, known: map[string]bool{}, listed: make(chan struct{})}
}

func (s *ledgerStore) Add(obj any) error { return s.Update(obj) }

func (s *ledgerStore) Update(obj any) error {
	u, ok := kube.UnitOf(obj)
	if !ok {
		return fmt.Errorf("checker: not a QueueUnit: %T", obj)
	}
	s.known[u.Namespace+"/"+u.Name] = true
	s.recorder.Observe(s.now(), u)
	return nil
}

func (s *ledgerStore) Delete(obj any) error {
	u, ok := kube.UnitOf(obj)
	if !ok {
		return fmt.Errorf("checker: not a QueueUnit: %T", obj)
	}
	delete(s.known, u.Namespace+"/"+u.Name)
	s.recorder.Delete(s.now(), u.Namespace, u.Name)
	return nil
}

// Replace records a list in the order its changes were made: the units gone
// since the last list first, then the listed ones by resourceVersion (etcd's
// revision of each unit's last write). What the ledger holds at each step is
// then at most what the API server held at that revision (a unit admitted
// and finished while the watch was down is never charged), so every moment
// it sees over a max was one.
func (s *ledgerStore) Replace(list []any, _ string) error {
	now := s.now()
	units := make([]*schedulingv1alpha1.QueueUnit, 0, len(list))
	listed := make(map[string]bool, len(list))
	for _, obj := range list {
		u, ok := kube.UnitOf(obj)
		if !ok {
			return fmt.Errorf("checker: not a QueueUnit: %T", obj)
		}
		units = append(units, u)
		listed[u.Namespace+"/"+u.Name] = true
	}
	for key := range s.known {
		if !listed[key] {
			namespace, name, _ := toolscache.SplitMetaNamespaceKey(key)
			s.recorder.Delete(now, namespace, name)
		}
	}
	slices.SortStableFunc(units, func(a, b *schedulingv1alpha1.QueueUnit) int {
		return cmp.Compare(revision(a), revision(b))
	})
	for _, u := range units {
		s.recorder.Observe(now, u)
	}
	s.known = listed
	s.listedOnce.Do(func() { close(s.listed) })
	return nil
}

func (s *ledgerStore) Resync() error { return nil }

// revision is the etcd revision the API server gives as a unit's
// resourceVersion (the harness runs its own etcd); 0 if it is not one.
func revision(u *schedulingv1alpha1.QueueUnit) uint64 {
	rv, _ := strconv.ParseUint(u.ResourceVersion, 10, 64)
	return rv
}
