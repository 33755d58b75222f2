//go:build unix

package rabbittest

import "syscall"

// killGroup kills the process group that childAttr made.
func killGroup(pid int) { _ = syscall.Kill(-pid, syscall.SIGKILL) }

// alive reports whether process pid exists (perhaps another user's).
func alive(pid int) bool {
	return syscall.Kill(pid, 0) != syscall.ESRCH
}
