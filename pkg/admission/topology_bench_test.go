package admission

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/pkg/topology"
)

const (
	benchBlock = "cloud.provider.com/topology-block"
	benchRack  = "cloud.provider.com/topology-rack"
	benchHost  = "kubernetes.io/hostname"
)

// BenchmarkCycleAskingTopology measures the Cache's scheduling cycle at
// issue 50's scale: 5,000 nodes in 10 blocks × 25 racks × 20 hosts, 8 GPUs
// each, a pod on each holding 4 to 8 of them; 100 quotas of 100 waiting
// units each (10,000 in all), with room for some 2,000. "today" is the
// units asking for no topology level; "asking" the same units, nine in ten
// asking one (racks required or preferred, blocks, hosts). "first" is the
// cycle after the units arrive, which builds the Topology's domain tree;
// "tree kept" the same cycle with the tree an earlier cycle built, as every
// cycle has until the Topology changes; "after a node changes" the cycle
// after that first one, woken by a node's cordon (the tree changed as the
// node did, the waiting units tried again); "after a pod leaves" the
// cycle a pod's end wakes once units wait for a domain (the refused tried
// again, a snapshot made again):
//
//	go test ./pkg/admission -run XXX -bench CycleAskingTopology -benchtime 5x -count 6
func BenchmarkCycleAskingTopology(b *testing.B) {
	for _, asking := range []bool{false, true} {
		name := "today"
		if asking {
			name = "asking"
		}
		b.Run("first/"+name, func(b *testing.B) {
			var admitted, refused int
			for range b.N {
				b.StopTimer()
				c := benchTopologyCache(asking)
				runtime.GC() // the set-up's garbage is not the cycle's
				b.StartTimer()
				res := c.cycle(time.Unix(100, 0), -1)
				b.StopTimer()
				admitted, refused = len(res.Admissions), waitingForADomain(c)
				b.StartTimer()
			}
			b.ReportMetric(float64(admitted), "admitted")
			b.ReportMetric(float64(refused), "refused-a-domain")
		})
	}
	b.Run("tree kept/asking", func(b *testing.B) {
		for range b.N {
			b.StopTimer()
			c := benchTopologyCache(true)
			// The domain tree an earlier cycle built, kept while no node
			// or Topology changes.
			c.mu.Lock()
			if _, err := c.topologies.snapshotInputs("default"); err != nil {
				b.Fatal(err)
			}
			c.mu.Unlock()
			runtime.GC()
			b.StartTimer()
			c.cycle(time.Unix(100, 0), -1)
		}
	})
	for _, asking := range []bool{false, true} {
		name := "today"
		if asking {
			name = "asking"
		}
		b.Run("after a node changes/"+name, func(b *testing.B) {
			for i := range b.N {
				b.StopTimer()
				c := benchTopologyCache(asking)
				c.cycle(time.Unix(100, 0), -1)
				name := fmt.Sprintf("node-%d-%d-%d", i%10, i%25, i%20)
				n := wrappers.Node(name, "96", "1Ti")
				n.Status.Allocatable["nvidia.com/gpu"] = resource.MustParse("8")
				n.Labels = map[string]string{benchBlock: fmt.Sprintf("block-%d", i%10), benchRack: fmt.Sprintf("rack-%d-%d", i%10, i%25), benchHost: name}
				n.Spec.Unschedulable = true // cordoned
				c.UpsertNode(n)
				runtime.GC()
				b.StartTimer()
				c.cycle(time.Unix(101, 0), -1)
			}
		})
	}
	b.Run("after a pod leaves/asking", func(b *testing.B) {
		for i := range b.N {
			b.StopTimer()
			c := benchTopologyCache(true)
			c.cycle(time.Unix(100, 0), -1)
			c.DeletePod("busy", fmt.Sprintf("busy-%d", i%5000))
			runtime.GC()
			b.StartTimer()
			c.cycle(time.Unix(101, 0), -1)
		}
	})
}

// benchTopologyCache is BenchmarkCycleAskingTopology's cluster, quotas and
// units, all fed to a new Cache.
func benchTopologyCache(asking bool) *Cache {
	rng := rand.New(rand.NewPCG(1, 2))
	c := NewCache()
	c.UpsertTopology(wrappers.Topology("default", benchBlock, benchRack, benchHost))
	for b := range 10 {
		for r := range 25 {
			for h := range 20 {
				name := fmt.Sprintf("node-%d-%d-%d", b, r, h)
				n := wrappers.Node(name, "96", "1Ti")
				n.Status.Allocatable["nvidia.com/gpu"] = resource.MustParse("8")
				n.Labels = map[string]string{benchBlock: fmt.Sprintf("block-%d", b), benchRack: fmt.Sprintf("rack-%d-%d", b, r), benchHost: name}
				c.UpsertNode(n)
				used := 4 + rng.IntN(5)
				c.UpsertPod(wrappers.MakePod(fmt.Sprintf("busy-%d", (b*25+r)*20+h), "busy").Node(name).
					Requests("cpu", fmt.Sprint(used*8), "nvidia.com/gpu", fmt.Sprint(used)).Obj())
			}
		}
	}
	shapes := [][]string{
		{"cpu", "8", "nvidia.com/gpu", "1"}, {"cpu", "16", "nvidia.com/gpu", "2"}, {"cpu", "4", "nvidia.com/gpu", "1"},
		{"cpu", "32", "nvidia.com/gpu", "4"}, {"cpu", "2"}, {"cpu", "12", "nvidia.com/gpu", "1"},
	}
	pick := func(counts ...int32) int32 { return counts[rng.IntN(len(counts))] }
	for q := range 100 {
		quota := fmt.Sprintf("team-%d", q)
		c.UpsertElasticQuota(wrappers.MakeElasticQuota(quota, quota).Max(corev1.ResourceCPU, "10000").Max("nvidia.com/gpu", "1000").
			Annotation(schedulingv1alpha1.AnnotationTopology, "default").Obj())
		c.UpsertQueue(&schedulingv1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Namespace: schedulingv1alpha1.QueueNamespace, Name: quota}})
		for u := range 100 {
			var count int32
			key, level := topology.AnnotationPodSetRequiredTopologyKueue, ""
			switch p := rng.IntN(10); {
			case p < 4:
				count, level = pick(4, 8, 16), benchRack
			case p < 6:
				count, level = pick(16, 32, 64), benchBlock
			case p < 8:
				count, level, key = pick(8, 24), benchRack, topology.AnnotationPodSetPreferredTopologyKueue
			case p < 9:
				count, level = pick(1, 2, 4), benchHost
			default:
				count = pick(1, 4)
			}
			w := wrappers.MakeQueueUnit(fmt.Sprintf("u-%d", u), quota).Quota(quota).PodSet("main", count, shapes[rng.IntN(len(shapes))]...)
			if asking && level != "" {
				w.PodSetAnnotation(key, level)
			}
			unit := w.Obj()
			unit.CreationTimestamp = metav1.NewTime(time.Unix(int64(u), 0))
			c.UpsertUnit(unit)
		}
	}
	return c
}

// waitingForADomain counts the units that fit their quota and wait for a
// domain with room.
func waitingForADomain(c *Cache) int {
	n := 0
	for key := range c.units {
		if strings.Contains(c.views.waitReason(key), " within ") {
			n++
		}
	}
	return n
}
