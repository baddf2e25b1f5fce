package prefault

import (
	"syscall"
	"unsafe"
)

// Size is how much of the heap is populated: about what a plan or a
// hook's decision touches in all (a plan of `true`, measured with perf's
// page-faults event, touches 3–4 MiB). Populating pages a process then
// does not use costs about 1 µs each and the memory they hold until it
// exits.
const Size = 4 << 20

const madvPopulateWrite = 23 // MADV_POPULATE_WRITE, Linux 5.14

// probe is the heap allocation the heap's position is read from.
var probe *[64]byte

func init() {
	probe = new([64]byte)
	at := uintptr(unsafe.Pointer(probe))
	_, hi, ok := mapping(at)
	if !ok {
		return
	}
	start := at &^ (pageSize - 1)
	Populate(start, min(start+Size, hi))
}

// pageSize is the system's page size (4 KiB on x86-64; 16 or 64 KiB on
// some arm64 kernels).
var pageSize = uintptr(syscall.Getpagesize())

// Populate maps in the pages of [start, end), page-aligned and within one
// writable private mapping, ahead of their use. Errors are ignored: the
// pages then fault in one by one, as without it.
func Populate(start, end uintptr) {
	if end <= start {
		return
	}
	syscall.Syscall(syscall.SYS_MADVISE, start, end-start, madvPopulateWrite)
}

// mapping returns the bounds of the mapping in /proc/self/maps that holds
// address at. It reads the file a few lines at a time, in a small buffer:
// a large one on the stack would make the runtime grow this early
// goroutine's stack, a copy costing more than the search.
func mapping(at uintptr) (lo, hi uintptr, ok bool) {
	fd, err := syscall.Open("/proc/self/maps", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return 0, 0, false
	}
	defer syscall.Close(fd)
	return scan(func(b []byte) (int, error) { return syscall.Read(fd, b) }, at)
}

// scan is mapping's search of the text read reads, a few lines at a time.
func scan(read func([]byte) (int, error), at uintptr) (lo, hi uintptr, ok bool) {
	var buf [2048]byte
	n := 0        // bytes of buf holding what is not searched yet
	long := false // in a line longer than buf (a long file name): skipped
	for {
		m, err := read(buf[n:])
		if err != nil || m <= 0 {
			if long {
				return 0, 0, false
			}
			// The last line, if the file does not end in a newline.
			return find(buf[:n], at)
		}
		n += m
		start := 0
		if long {
			i := 0
			for i < n && buf[i] != '\n' {
				i++
			}
			if i == n {
				n = 0
				continue
			}
			start, long = i+1, false
		}
		// Search the whole lines read; keep the partial last one.
		end := n
		for end > start && buf[end-1] != '\n' {
			end--
		}
		if end > start {
			if lo, hi, ok := find(buf[start:end], at); ok {
				return lo, hi, true
			}
		} else if n-start == len(buf) {
			long, n = true, 0
			continue
		}
		n = copy(buf[:], buf[end:n])
	}
}

// find returns the bounds of the line of maps, the text of
// /proc/self/maps, whose range holds at.
func find(maps []byte, at uintptr) (lo, hi uintptr, ok bool) {
	for len(maps) > 0 {
		line, rest := maps, []byte(nil)
		for i, c := range maps {
			if c == '\n' {
				line, rest = maps[:i], maps[i+1:]
				break
			}
		}
		maps = rest
		lo, i := hexPrefix(line)
		if i == 0 || i >= len(line) || line[i] != '-' {
			continue
		}
		hi, j := hexPrefix(line[i+1:])
		if j == 0 {
			continue
		}
		if lo <= at && at < hi {
			return lo, hi, true
		}
	}
	return 0, 0, false
}

// hexPrefix parses the lower-case hexadecimal number b begins with and
// returns it and its length.
func hexPrefix(b []byte) (uintptr, int) {
	var v uintptr
	for i, c := range b {
		switch {
		case '0' <= c && c <= '9':
			v = v<<4 | uintptr(c-'0')
		case 'a' <= c && c <= 'f':
			v = v<<4 | uintptr(c-'a'+10)
		default:
			return v, i
		}
		if i >= 16 {
			return 0, 0
		}
	}
	return v, len(b)
}
