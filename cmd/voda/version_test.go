package main

import (
	"runtime"
	"strings"
	"testing"
)

// TestVersion checks both spellings print one line with the version, the
// revision and the Go version, stamped or not.
func TestVersion(t *testing.T) {
	cases := []struct {
		name              string
		version, revision string
		want              string
	}{
		{"unstamped", "", "", "voda devel (revision unknown, " + runtime.Version()},
		{"stamped", "v1.2.3", "0123abcd", "voda v1.2.3 (revision 0123abcd, " + runtime.Version()},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			oldV, oldR := version, revision
			version, revision = c.version, c.revision
			t.Cleanup(func() { version, revision = oldV, oldR })
			for _, args := range [][]string{{"version"}, {"--version"}} {
				out := mustRun(t, args...)
				if !strings.HasPrefix(out, c.want) || strings.Count(out, "\n") != 1 {
					t.Errorf("voda %s = %q, want one line starting %q", args[0], out, c.want)
				}
			}
		})
	}
}
