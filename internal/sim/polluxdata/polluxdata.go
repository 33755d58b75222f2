// Package polluxdata finds the Pollux OSDI'21 artifact data that tests and
// benchmarks replay. The data lives beside the repository, in
// ../shared/traces/pollux, and is not copied into it; a fresh clone has no
// such folder, so tests that need it skip with instructions instead.
package polluxdata

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// Hint tells a user where to get the data.
const Hint = "put the Pollux artifact's simulator/{traces,workloads*,results-jobload} in ../shared/traces/pollux beside the repository (see docs/simulator.md#getting-the-pollux-data)"

// Find returns <repository>/../shared/traces/pollux and whether it holds
// the traces.
func Find() (string, bool) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", false
	}
	// This file is internal/sim/polluxdata/polluxdata.go.
	dir := filepath.Join(filepath.Dir(file), "..", "..", "..", "..", "shared", "traces", "pollux")
	_, err := os.Stat(filepath.Join(dir, "traces", "cifar10", "placements.csv"))
	return dir, err == nil
}

// Dir returns the data directory, or skips tb when it is absent.
func Dir(tb testing.TB) string {
	tb.Helper()
	dir, ok := Find()
	if !ok {
		tb.Skipf("Pollux artifact data not found at %s: %s", dir, Hint)
	}
	return dir
}

// Traces returns the directory of measured job profiles, or skips tb.
func Traces(tb testing.TB) string {
	tb.Helper()
	return filepath.Join(Dir(tb), "traces")
}
