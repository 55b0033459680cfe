package policy

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkQueueChurn measures the queue's tree under a steady churn: with
// n units waiting, one unit is upserted, the policy offers the headroom,
// the unit at a place is read, a page is taken, and the unit is removed.
func BenchmarkQueueChurn(b *testing.B) {
	for _, n := range []int{1000, 100000} {
		b.Run(fmt.Sprint("units=", n), func(b *testing.B) {
			q := NewQueue(Config{})
			t0 := time.Unix(1_700_000_000, 0)
			item := func(i int) Item {
				return Item{
					Key:         fmt.Sprintf("ns/u%07d", i),
					Priority:    int32(i % 7),
					EnqueueTime: t0.Add(time.Duration(i) * time.Second),
					Request:     []int64{int64(1 + i%13), int64(1 + i%5)},
				}
			}
			for i := range n {
				q.Upsert(item(i))
			}
			free := []int64{3, 2}
			extra := make([]Item, 1024)
			for i := range extra {
				extra[i] = item(n + i)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				it := extra[i%len(extra)]
				q.Upsert(it)
				_ = q.Offer(t0, free)
				_ = q.Position(it.Key)
				_, _ = q.At(n / 2)
				_ = q.ItemsFrom(n/2, 20)
				q.Remove(it.Key)
			}
		})
	}
}
