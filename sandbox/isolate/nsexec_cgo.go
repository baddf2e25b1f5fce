//go:build linux && cgo

// The sandbox child — the C constructor in nsexec.c and the files it calls
// (nsexec_*.c, split by job, with nsexec.h) — is linked into every binary
// that imports this package; it does nothing unless the binary was
// re-executed by Run. cgo compiles every .c file of the directory, so each
// carries this file's build constraint.

package isolate

import "C"

// childLinked reports that the sandbox child (nsexec*.c) is in this binary.
const childLinked = true
