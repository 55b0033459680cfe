package ordered

import (
	"fmt"
	"math/rand"
	"slices"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// item is an int key with an augmentation: the sum of the keys in the
// subtree, kept by fix.
type item struct {
	key, sum int
}

func lessItem(a, b *item) bool { return a.key < b.key }

func fixSum(n *Node[item]) {
	n.Item.sum = n.Item.key
	if l := n.Left(); l != nil {
		n.Item.sum += l.Item.sum
	}
	if r := n.Right(); r != nil {
		n.Item.sum += r.Item.sum
	}
}

func keys(t *Tree[item]) []int {
	var ks []int
	t.Each(func(n *Node[item]) bool { ks = append(ks, n.Item.key); return true })
	return ks
}

// checkSums checks every node's size and sum against its subtree.
func checkSums(t *testing.T, n *Node[item]) (size, sum int) {
	t.Helper()
	if n == nil {
		return 0, 0
	}
	ls, lsum := checkSums(t, n.Left())
	rs, rsum := checkSums(t, n.Right())
	if n.Size() != ls+rs+1 || n.Item.sum != lsum+rsum+n.Item.key {
		t.Fatalf("node %d: size %d sum %d, want %d and %d", n.Item.key, n.Size(), n.Item.sum, ls+rs+1, lsum+rsum+n.Item.key)
	}
	return n.Size(), n.Item.sum
}

func TestTreeMatchesASortedSlice(t *testing.T) {
	for seed := int64(0); seed < 20; seed++ {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			tr := New(lessItem, fixSum)
			var want []int
			for step := 0; step < 400; step++ {
				k := rng.Intn(100)
				i, found := slices.BinarySearch(want, k)
				if rng.Intn(3) > 0 {
					if !found {
						want = slices.Insert(want, i, k)
						tr.Insert(NewNode(item{key: k}, Hash(strconv.Itoa(k))))
					}
				} else {
					got := tr.Remove(&item{key: k})
					if (got != nil) != found || got != nil && got.Item.key != k {
						t.Fatalf("step %d: Remove(%d) = %v, want found=%v", step, k, got, found)
					}
					if found {
						want = slices.Delete(want, i, i+1)
					}
				}
				checkSums(t, tr.Root())
				if diff := cmp.Diff(want, keys(&tr)); diff != "" {
					t.Fatalf("step %d: items (-want +got):\n%s", step, diff)
				}
				if tr.Len() != len(want) {
					t.Fatalf("step %d: Len() = %d, want %d", step, tr.Len(), len(want))
				}
				q := rng.Intn(102) - 1
				j, has := slices.BinarySearch(want, q)
				if r := tr.Rank(&item{key: q}); r != j {
					t.Errorf("step %d: Rank(%d) = %d, want %d", step, q, r, j)
				}
				if n := tr.Find(&item{key: q}); (n != nil) != has {
					t.Errorf("step %d: Find(%d) = %v, want found=%v", step, q, n, has)
				}
				next := j
				if has {
					next++
				}
				if n := tr.After(&item{key: q}); next == len(want) && n != nil || next < len(want) && (n == nil || n.Item.key != want[next]) {
					t.Errorf("step %d: After(%d) = %v, want %v", step, q, n, want[next:min(next+1, len(want))])
				}
				if n := tr.After(nil); len(want) > 0 && (n == nil || n.Item.key != want[0]) || len(want) == 0 && n != nil {
					t.Errorf("step %d: After(nil) = %v, want the first of %v", step, n, want)
				}
				if n := tr.First(); len(want) > 0 && (n == nil || n.Item.key != want[0]) || len(want) == 0 && n != nil {
					t.Errorf("step %d: First() = %v, want the first of %v", step, n, want)
				}
				p := rng.Intn(len(want)+2) - 1
				if n := tr.Nth(p); p >= 0 && p < len(want) && (n == nil || n.Item.key != want[p]) || (p < 0 || p >= len(want)) && n != nil {
					t.Errorf("step %d: Nth(%d) = %v, want place %d of %v", step, p, n, p, want)
				}
				page := rng.Intn(5) + 1
				var got []int
				tr.EachFrom(p, func(n *Node[item]) bool {
					got = append(got, n.Item.key)
					return len(got) < page
				})
				wantPage := want[min(max(p, 0), len(want)):]
				wantPage = wantPage[:min(page, len(wantPage))]
				if diff := cmp.Diff(wantPage, got, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("step %d: EachFrom(%d) page of %d (-want +got):\n%s", step, p, page, diff)
				}
			}
		})
	}
}

// TestTreeShapeDependsOnlyOnItems: the same items, inserted in any order,
// build the same tree.
func TestTreeShapeDependsOnlyOnItems(t *testing.T) {
	shape := func(order []int) string {
		tr := New(lessItem, nil)
		for _, k := range order {
			tr.Insert(NewNode(item{key: k}, Hash(strconv.Itoa(k))))
		}
		var s func(n *Node[item]) string
		s = func(n *Node[item]) string {
			if n == nil {
				return "."
			}
			return "(" + s(n.Left()) + strconv.Itoa(n.Item.key) + s(n.Right()) + ")"
		}
		return s(tr.Root())
	}
	rng := rand.New(rand.NewSource(1))
	order := rng.Perm(200)
	want := shape(order)
	for range 5 {
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		if got := shape(order); got != want {
			t.Fatalf("shape after shuffle differs:\n%s\nwant\n%s", got, want)
		}
	}
}
