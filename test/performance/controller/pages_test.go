package controller

import (
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestDropCachedPages: a file just written has its pages in the page
// cache; after dropCachedPages none are.
func TestDropCachedPages(t *testing.T) {
	dir := t.TempDir()
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		t.Fatal(err)
	}
	if fs.Type == unix.TMPFS_MAGIC {
		t.Skip("tmpfs keeps its pages in memory: nothing to drop")
	}
	file := filepath.Join(dir, "binary")
	if err := os.WriteFile(file, make([]byte, 4<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := residentPages(t, file); got == 0 {
		t.Fatal("a file just written has no page in the page cache")
	}
	if err := dropCachedPages(file); err != nil {
		t.Fatal(err)
	}
	if got := residentPages(t, file); got != 0 {
		t.Errorf("%d pages of the file in the page cache after dropping them, want 0", got)
	}
}

// residentPages is how many pages of file the page cache holds.
func residentPages(t *testing.T, file string) int {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	vec := make([]byte, (len(mem)+os.Getpagesize()-1)/os.Getpagesize())
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&mem[0])), uintptr(len(mem)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatal(errno)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}
