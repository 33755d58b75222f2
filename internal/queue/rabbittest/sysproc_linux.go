//go:build linux

package rabbittest

import "syscall"

// childAttr puts a child in its own process group (a terminal's Ctrl-C
// reaches the test binary, whose exit then stops the broker in order) and
// has the kernel kill it if the test binary dies first.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
