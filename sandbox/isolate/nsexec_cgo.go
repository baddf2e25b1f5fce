//go:build linux && cgo

// The C constructor in nsexec.c is linked into every binary that imports
// this package; it does nothing unless the binary was re-executed by Run.

package isolate

import "C"

// childLinked reports that the sandbox child (nsexec.c) is in this binary.
const childLinked = true
