// Package heap measures the Go heap for the memory benchmarks: what a
// structure holds is the live heap with it less the live heap without it.
package heap

import "runtime"

// Live is the bytes of heap objects in use after a collection: what the
// program holds, without its garbage. Signed, so that a difference of two
// readings may go below zero.
func Live() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
