package perfmodel

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/vodascheduler/voda/internal/sim/polluxdata"
)

func TestPacked(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want string
	}{{1, "1"}, {4, "4"}, {6, "2.4"}, {12, "4.4.4"}, {0, ""}} {
		if got := placementKey(packed(tc.n)); got != tc.want {
			t.Errorf("packed(%d) = %s, want %s", tc.n, got, tc.want)
		}
	}
}

// TestConfigurationsMatchArtifact checks the reimplementation against the
// artifact's own output: every (application, replicas, batch) of its 1.0x
// workloads must be one of the computed configurations.
func TestConfigurationsMatchArtifact(t *testing.T) {
	dir := polluxdata.Dir(t)
	apps, err := LoadPolluxDir(filepath.Join(dir, "traces"))
	if err != nil {
		t.Fatal(err)
	}
	configs := map[string]map[[2]int]bool{}
	for _, a := range apps {
		cs, err := a.Configurations(0.5, 0.8)
		if err != nil {
			t.Fatal(err)
		}
		if len(cs) == 0 {
			t.Fatalf("%s: no configurations", a.Name())
		}
		set := map[[2]int]bool{}
		for i, c := range cs {
			if c.Replicas < 1 || c.Batch < 1 || !(c.JCT > 0) {
				t.Errorf("%s: bad configuration %+v", a.Name(), c)
			}
			if i > 0 && c.Replicas <= cs[i-1].Replicas {
				t.Errorf("%s: configurations not in increasing replicas: %+v", a.Name(), cs)
			}
			set[[2]int{c.Replicas, c.Batch}] = true
		}
		configs[a.Name()] = set
		t.Logf("%s: %+v", a.Name(), cs)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "workloads", "workload-*.csv"))
	if len(files) == 0 {
		t.Skipf("no 1.0x workloads in %s: %s", dir, polluxdata.Hint)
	}
	used := map[string]map[[2]int]bool{}
	for _, f := range files {
		rows := readRows(t, f)
		for i, r := range rows[1:] {
			app := r[2]
			rep, err1 := strconv.Atoi(r[3])
			b, err2 := strconv.Atoi(r[4])
			if err1 != nil || err2 != nil {
				t.Fatalf("%s line %d: bad numbers %v", f, i+2, r)
			}
			k := [2]int{rep, b}
			if !configs[app][k] {
				t.Errorf("%s line %d: %s with %d replicas at batch %d is not a computed configuration", filepath.Base(f), i+2, app, rep, b)
			}
			if used[app] == nil {
				used[app] = map[[2]int]bool{}
			}
			used[app][k] = true
		}
	}
	// Every computed configuration should show up somewhere in 1280 jobs,
	// except where an application is too rare to sample them all.
	for app, set := range configs {
		for k := range set {
			if !used[app][k] {
				t.Logf("%s: configuration %v never used by the artifact's workloads", app, k)
			}
		}
	}
}

func readRows(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return rows
}
