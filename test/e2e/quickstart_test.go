package e2e

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestQuickstart follows the README: start the server on its defaults,
// create every example with the CLI, and watch `voda get jobs` show them
// Running, then Completed.
func TestQuickstart(t *testing.T) {
	srv := startServer(t, "--data-dir", t.TempDir(), "--speed", "200")
	voda := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(binary(t), args...)
		cmd.Env = append(cmd.Environ(), "VODA_SERVER=http://"+srv.Addr)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("voda %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	examples, err := filepath.Glob("../../examples/*.yaml")
	if err != nil || len(examples) == 0 {
		t.Fatalf("no examples found: %v", err)
	}
	var names []string
	for _, f := range examples {
		out := voda("create", "-f", f)
		name, ok := strings.CutPrefix(strings.TrimSpace(out), "Training job created: ")
		if !ok {
			t.Fatalf("voda create -f %s printed %q", f, out)
		}
		names = append(names, name)
	}

	status := func(table, name string) string {
		for _, line := range strings.Split(table, "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == name {
				return f[1]
			}
		}
		return ""
	}
	header := strings.Fields(strings.SplitN(voda("get", "jobs"), "\n", 2)[0])
	if strings.Join(header, " ") != "NAME STATUS WORKERS SCHEDULER WAITING RUNNING TOTAL" {
		t.Errorf("voda get jobs header = %v", header)
	}
	sawRunning := map[string]bool{}
	waitFor(t, "every example Completed", 120*time.Second, func() (bool, error) {
		table := voda("get", "jobs")
		done := 0
		for _, n := range names {
			switch status(table, n) {
			case "Running":
				sawRunning[n] = true
			case "Completed":
				done++
			}
		}
		return done == len(names), nil
	})
	if len(sawRunning) == 0 {
		t.Errorf("no example was ever seen Running")
	}
	desc := voda("describe", "job", names[0])
	for _, want := range []string{names[0], "Completed"} {
		if !strings.Contains(desc, want) {
			t.Errorf("voda describe job lacks %q:\n%s", want, desc)
		}
	}
}
