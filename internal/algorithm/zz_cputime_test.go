package algorithm

import (
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

func threadCPU() time.Duration {
	var ts syscall.Timespec
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 3, uintptr(unsafe.Pointer(&ts)), 0)
	return time.Duration(ts.Nano())
}

func TestZZCPUTime(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for _, name := range Builtin().Names() {
		a := mustNew(t, name)
		snap := benchSnapshot(10000, 8000, 1)
		best := time.Hour
		for range 30 {
			runtime.GC()
			c := threadCPU()
			a.Allocate(snap)
			if d := threadCPU() - c; d < best {
				best = d
			}
		}
		fmt.Printf("%-16s %v\n", name, best)
	}
}
