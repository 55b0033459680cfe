package admission

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"

	"github.com/koord-queue/koord-queue/pkg/metrics"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
)

// takenOwed is one unit takeOwed gave.
type takenOwed struct {
	Key   string
	Kinds owed
	Since time.Time
}

// takeAllOwed takes every owed unit, in order.
func takeAllOwed(c *Cache) []takenOwed {
	var out []takenOwed
	for {
		key, kinds, since, ok := c.owedWrites.takeOwed()
		if !ok {
			return out
		}
		out = append(out, takenOwed{key, kinds, since})
	}
}

// TestOwedWritesComeOncePerUnitInTheOrderFirstOwed: a unit owed writes
// again keeps its place and is given once, with all it is owed and since
// it was first owed; a unit the Cache does not have is owed nothing; a
// unit deleted before its turn is skipped, and one made again under its
// name owes only what it is owed since.
func TestOwedWritesComeOncePerUnitInTheOrderFirstOwed(t *testing.T) {
	c := teamCache("1")
	for _, name := range []string{"a", "b", "c"} {
		c.UpsertUnit(wrappers.MakeQueueUnit(name, "ns").Quota("team").Request(corev1.ResourceCPU, "2").Obj())
	}
	t0 := time.Unix(1000, 0)
	t1 := t0.Add(time.Second)
	c.owedWrites.owe(owesMessage, t0, "ns/b", "ns/a", "ns/gone")
	c.owedWrites.owe(owesQueueName, t1, "ns/c", "ns/b")
	c.owedWrites.owe(owesMessage, t1, "ns/b")
	if !c.owedWrites.owesWrites() {
		t.Fatal("owesWrites is false with units owed writes")
	}
	if got := testutil.ToFloat64(metrics.DeferredWrites); got != 3 {
		t.Errorf("koord_queue_deferred_writes %v, want 3", got)
	}
	want := []takenOwed{
		{"ns/b", owesMessage | owesQueueName, t0},
		{"ns/a", owesMessage, t0},
		{"ns/c", owesQueueName, t1},
	}
	if diff := cmp.Diff(want, takeAllOwed(c)); diff != "" {
		t.Errorf("owed units taken (-want +got):\n%s", diff)
	}
	if c.owedWrites.owesWrites() {
		t.Error("owesWrites is true once every owed unit was taken")
	}

	c.owedWrites.owe(owesMessage, t0, "ns/a", "ns/b")
	c.DeleteUnit("ns", "a")
	c.DeleteUnit("ns", "b")
	c.UpsertUnit(wrappers.MakeQueueUnit("b", "ns").Quota("team").Request(corev1.ResourceCPU, "2").Obj())
	if c.owedWrites.owesWrites() {
		t.Error("owesWrites is true with the owed units deleted")
	}
	if got := testutil.ToFloat64(metrics.DeferredWrites); got != 0 {
		t.Errorf("koord_queue_deferred_writes %v with the owed units deleted, want 0", got)
	}
	c.owedWrites.owe(owesQueueName, t1, "ns/b")
	// The new b may come at the old b's place (the key is what is queued).
	want = []takenOwed{{Key: "ns/b", Kinds: owesQueueName}}
	if diff := cmp.Diff(want, takeAllOwed(c), cmpopts.IgnoreFields(takenOwed{}, "Since")); diff != "" {
		t.Errorf("owed units taken after deletions (-want +got):\n%s", diff)
	}
}

// TestOwedQueueGivesBackABurstsRoom: once a burst of owed units is taken,
// the queue does not keep its room.
func TestOwedQueueGivesBackABurstsRoom(t *testing.T) {
	c := teamCache("1")
	var keys []string
	for i := range 2 * owedRingKept {
		u := wrappers.MakeQueueUnit(fmt.Sprintf("u%d", i), "ns").Quota("team").Obj()
		c.UpsertUnit(u)
		keys = append(keys, "ns/"+u.Name)
	}
	c.owedWrites.owe(owesMessage, time.Unix(0, 0), keys...)
	if got := len(takeAllOwed(c)); got != len(keys) {
		t.Fatalf("%d owed units taken, want %d", got, len(keys))
	}
	if got := c.owedWrites.owed.keys.Cap(); got > owedRingKept {
		t.Errorf("an empty queue keeps room for %d keys, want at most %d", got, owedRingKept)
	}
}
