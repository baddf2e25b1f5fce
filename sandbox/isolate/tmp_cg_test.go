package isolate

import (
	"testing"
	"time"
)

func TestTmpCgroupCost(t *testing.T) {
	t0 := time.Now()
	for i := 0; i < 50; i++ {
		cg := newCgroupV1(Limits{MemoryMB: 256}, 1024)
		cg.remove()
	}
	t.Log("cgroup create+remove", time.Since(t0)/50)
	t0 = time.Now()
	for i := 0; i < 50; i++ {
		cg := newCgroupV1(Limits{MemoryMB: 256}, 1024)
		cg.add(1)
		cg.remove()
	}
}
