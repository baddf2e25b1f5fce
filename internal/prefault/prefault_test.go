package prefault

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestPopulate: the pages of a fresh anonymous mapping are not resident
// until Populate maps them in, and only those it was given.
func TestPopulate(t *testing.T) {
	const pages = 64
	probe, err := unix.Mmap(-1, 0, int(pageSize), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(probe)
	if err := unix.Madvise(probe, madvPopulateWrite); err != nil {
		t.Skipf("madvise(MADV_POPULATE_WRITE), Linux 5.14: %v", err)
	}
	b, err := unix.Mmap(-1, 0, pages*int(pageSize), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(b)
	resident := func() []bool {
		vec := make([]byte, pages)
		if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
			t.Fatal(e)
		}
		r := make([]bool, pages)
		for i, v := range vec {
			r[i] = v&1 != 0
		}
		return r
	}
	for i, r := range resident() {
		if r {
			t.Fatalf("page %d resident before Populate", i)
		}
	}
	start := uintptr(unsafe.Pointer(&b[0]))
	Populate(start+8*pageSize, start+24*pageSize)
	for i, r := range resident() {
		if want := 8 <= i && i < 24; r != want {
			t.Errorf("page %d resident %v after Populate of pages 8-23, want %v", i, r, want)
		}
	}
}

// TestFind: the mapping holding an address is found in the text of
// /proc/self/maps, at its first line, its last (with or without a final
// newline) and its bounds; an address outside every mapping, or a
// malformed line, finds none.
func TestFind(t *testing.T) {
	maps := "00400000-00403000 r--p 00000000 fe:00 1  /usr/bin/act\n" +
		"garbage line\n" +
		"1635ad000000-1635ad800000 rw-p 00000000 00:00 0 \n" +
		"7ffd0e5e1000-7ffd0e602000 rw-p 00000000 00:00 0                          [stack]"
	for _, tc := range []struct {
		at     uintptr
		lo, hi uintptr
		ok     bool
	}{
		{0x400000, 0x400000, 0x403000, true},
		{0x402fff, 0x400000, 0x403000, true},
		{0x403000, 0, 0, false},
		{0x1635ad123456, 0x1635ad000000, 0x1635ad800000, true},
		{0x7ffd0e601fff, 0x7ffd0e5e1000, 0x7ffd0e602000, true},
		{0x10, 0, 0, false},
	} {
		for _, text := range []string{maps, maps + "\n"} {
			lo, hi, ok := find([]byte(text), tc.at)
			if lo != tc.lo || hi != tc.hi || ok != tc.ok {
				t.Errorf("find(%#x) = %#x, %#x, %v; want %#x, %#x, %v", tc.at, lo, hi, ok, tc.lo, tc.hi, tc.ok)
			}
		}
	}
}

// TestMappingOfHeap: this process's heap allocation is found in its own
// /proc/self/maps, in a writable mapping.
func TestMappingOfHeap(t *testing.T) {
	if _, err := os.Stat("/proc/self/maps"); err != nil {
		t.Skip("no /proc here")
	}
	at := uintptr(unsafe.Pointer(probe))
	lo, hi, ok := mapping(at)
	if !ok {
		t.Fatalf("the heap address %#x is in no mapping of /proc/self/maps", at)
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%x-%x rw", lo, hi)
	if !strings.Contains(string(maps), want) {
		t.Errorf("mapping(%#x) = %#x-%#x, which /proc/self/maps does not list as writable:\n%s", at, lo, hi, maps)
	}
}

// TestScan: the search reads the maps text a few lines at a time, in
// pieces of any size, and skips a line longer than its buffer (a long
// file name) rather than stopping there.
func TestScan(t *testing.T) {
	long := "00500000-00501000 r--p 00000000 fe:00 1  /" + strings.Repeat("d", 5000) + "\n"
	maps := "00400000-00403000 r--p 00000000 fe:00 1  /usr/bin/act\n" + long +
		"1635ad000000-1635ad800000 rw-p 00000000 00:00 0 \n" +
		"7ffd0e5e1000-7ffd0e602000 rw-p 00000000 00:00 0 [stack]"
	for _, piece := range []int{1, 7, 100, 2047, 2048, 4096, 1 << 20} {
		for _, tc := range []struct {
			at     uintptr
			lo, hi uintptr
			ok     bool
		}{
			{0x401000, 0x400000, 0x403000, true},
			{0x500000, 0, 0, false}, // in the skipped line
			{0x1635ad7fffff, 0x1635ad000000, 0x1635ad800000, true},
			{0x7ffd0e5e1000, 0x7ffd0e5e1000, 0x7ffd0e602000, true}, // the last line, without a newline
			{0x10, 0, 0, false},
		} {
			rest := maps
			read := func(b []byte) (int, error) {
				n := copy(b, rest[:min(piece, len(rest))])
				rest = rest[n:]
				return n, nil
			}
			lo, hi, ok := scan(read, tc.at)
			if lo != tc.lo || hi != tc.hi || ok != tc.ok {
				t.Errorf("pieces of %d: scan(%#x) = %#x, %#x, %v; want %#x, %#x, %v", piece, tc.at, lo, hi, ok, tc.lo, tc.hi, tc.ok)
			}
		}
	}
}
