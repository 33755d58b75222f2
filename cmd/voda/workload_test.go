package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWorkloadGenerateErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"workload", "generate"}, "--profiles is required"},
		{[]string{"workload", "generate", "--profiles", "x", "--count", "0"}, "--count 0"},
		{[]string{"workload", "generate", "--profiles", "x", "--count", "2"}, "needs -o DIR"},
		{[]string{"workload", "generate", "--profiles", t.TempDir()}, "no application directories"},
		{[]string{"workload", "generate", "--profiles", filepath.Join(t.TempDir(), "traces")}, "docs/simulator.md#getting-the-pollux-data"},
		{[]string{"workload", "generate", "--profiles", t.TempDir(), "-o", filepath.Join(t.TempDir(), "missing", "w.csv")}, "-o: cannot write"},
	} {
		_, _, err := run(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("voda %s: error %v, want one containing %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
}

func TestWorkloadGenerate(t *testing.T) {
	traces := filepath.Join(polluxDir(t), "traces")
	if _, err := os.Stat(filepath.Join(traces, "philly.csv")); err != nil {
		t.Skipf("no Philly trace in %s: copy the Pollux artifact's simulator/traces there", traces)
	}
	one := mustRun(t, "workload", "generate", "--profiles", traces, "--seed", "5", "--jobs", "20")
	if lines := strings.Split(strings.TrimSpace(one), "\n"); len(lines) != 21 || lines[0] != "name,time,application,num_replicas,batch_size" {
		t.Fatalf("stdout has %d lines, starting %q", len(lines), lines[0])
	}
	if again := mustRun(t, "workload", "generate", "--profiles", traces, "--seed", "5", "--jobs", "20"); again != one {
		t.Error("the same seed gave a different workload")
	}
	dir := filepath.Join(t.TempDir(), "w")
	mustRun(t, "workload", "generate", "--profiles", traces, "--seed", "5", "--count", "2", "--jobs", "20", "--load", "0.5", "-o", dir)
	files, _ := filepath.Glob(filepath.Join(dir, "*.csv"))
	if len(files) != 2 || filepath.Base(files[0]) != "workload-5.csv" || filepath.Base(files[1]) != "workload-6.csv" {
		t.Fatalf("wrote %v", files)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "\n"); n != 11 {
		t.Errorf("load 0.5 of 20 jobs: %d lines, want 11", n)
	}
	// The simulator replays the directory.
	out := mustRun(t, "simulate", "--workload", dir, "--profiles", traces, "--interval", "60s", "-q")
	if !strings.Contains(out, "FIFO") {
		t.Errorf("simulate output:\n%s", out)
	}
}
