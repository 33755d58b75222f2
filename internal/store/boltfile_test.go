//go:build unix

package store

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"syscall"
	"testing"
)

// TestGuardBoltFault checks guardBolt turns a fault on a mapping past the
// end of its file, what bbolt meets on a truncated file, into an error
// instead of a crash of the process.
func TestGuardBoltFault(t *testing.T) {
	ps := os.Getpagesize()
	path := filepath.Join(t.TempDir(), "short")
	if err := os.WriteFile(path, make([]byte, ps), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	m, err := syscall.Mmap(int(f.Fd()), 0, 2*ps, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Munmap(m) }()

	var b byte
	err = guardBolt(func() error {
		b = m[ps] // the page past the end of the file
		return nil
	})
	runtime.KeepAlive(b)
	var pe panicError
	if !errors.As(err, &pe) {
		t.Fatalf("guardBolt = %v, want the fault as a panicError", err)
	}
	t.Logf("guardBolt: %v", err)
	// The setting is restored: this goroutine's faults crash again.
	if debugPanicOnFault() {
		t.Error("guardBolt left SetPanicOnFault on")
	}
}

// debugPanicOnFault reports this goroutine's SetPanicOnFault setting.
func debugPanicOnFault() bool {
	on := debug.SetPanicOnFault(false)
	debug.SetPanicOnFault(on)
	return on
}
