//go:build linux && cgo

// The sandbox child — the C constructor in nsexec.c and the files it calls
// (nsexec_*.c, split by job, with nsexec.h) — is linked into every binary
// that imports this package; it does nothing unless the binary was
// re-executed by Run. cgo compiles every .c file of the directory, so each
// carries this file's build constraint.

package isolate

// extern long long act_start_ns;
import "C"

import "github.com/act-project/act/internal/timings"

// childLinked reports that the sandbox child (nsexec*.c) is in this binary.
const childLinked = true

// The constructor stamps every act process's start, before the Go
// runtime: --timings counts its start-up from there (docs/timings.md).
func init() { timings.SetProcessStart(int64(C.act_start_ns)) }
