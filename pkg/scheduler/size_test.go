package scheduler

import (
	"testing"
	"unsafe"
)

// TestUnitStateFitsItsSizeClass: the core keeps a unitState per unit, and
// a forecast's replay another; at 288 bytes it took the size class above
// 256, 32 bytes a unit more (see Unit's comment on where its flags sit).
func TestUnitStateFitsItsSizeClass(t *testing.T) {
	if got := unsafe.Sizeof(unitState{}); got > 256 {
		t.Errorf("unitState is %d bytes, want at most 256", got)
	}
}
