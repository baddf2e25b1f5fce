// Package prefault maps in, with one system call, the part of the Go heap
// an act process is about to use, instead of taking a page fault on the
// first touch of each page (docs/timings.md, "Start-up").
//
// A page fault is cheap on bare metal (under a microsecond) and dear in
// many virtual machines: 10–20 µs here, where the hypervisor handles
// each one, against about 1 µs a page for madvise(MADV_POPULATE_WRITE).
// A plan's act process touches 2–4 MiB of fresh heap in a few
// thousand allocations, most of them in package initialisation, so this
// package's own init runs early (it imports only syscall and unsafe, and
// Go initialises packages whose imports are done in the order of their
// paths) and populates the heap just above its first allocation.
//
// It is an optimisation only: where the kernel lacks
// MADV_POPULATE_WRITE (before Linux 5.14) or /proc is not mounted,
// nothing is done and nothing fails.
package prefault
