//go:build unix && !linux

package rabbittest

import "syscall"

// childAttr puts a child in its own process group. Without Linux's
// Pdeathsig, epmd outlives a test binary that dies without running Main's
// clean-up; the broker still stops when its stdin closes.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
