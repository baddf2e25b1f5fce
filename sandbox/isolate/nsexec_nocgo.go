//go:build !linux || !cgo

package isolate

// childLinked is false: without cgo on Linux there is no sandbox child, and
// [Available] says so.
const childLinked = false
