package cgrouptest

import _ "embed"

// MemoryAttack is a Python program that attacks a memory cap from every
// side a cgroup must count: ten processes that each hold up to 100 MiB, a
// memfd filled with write() (never mapped, so no RLIMIT_AS counts it) and
// a SysV segment filled and detached. It prints what it held at once. Run
// it as python3 -c MemoryAttack under a cap of 128 MiB.
//
//go:embed memory_attack.py
var MemoryAttack string
