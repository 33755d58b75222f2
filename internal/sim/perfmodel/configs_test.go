package perfmodel

import (
	"path/filepath"
	"testing"

	"github.com/vodascheduler/voda/internal/sim/polluxdata"
	"github.com/vodascheduler/voda/internal/sim/workload"
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
// artifact's own output: every (application, replicas, batch) of its
// workloads (all loads) must be one of the computed configurations, and
// every computed configuration must occur in them.
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
	files, _ := filepath.Glob(filepath.Join(dir, "workloads*", "workload-*.csv"))
	if len(files) == 0 {
		t.Skipf("no workloads in %s: %s", dir, polluxdata.Hint)
	}
	used := map[string]map[[2]int]bool{}
	for _, f := range files {
		jobs, err := workload.Read(f, workload.FormatPollux, workload.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range jobs {
			k := [2]int{j.Requested, j.BatchSize}
			if !configs[j.App][k] {
				t.Errorf("%s: %s: %d replicas at batch %d is not a computed configuration of %s", filepath.Base(f), j.Name, j.Requested, j.BatchSize, j.App)
			}
			if used[j.App] == nil {
				used[j.App] = map[[2]int]bool{}
			}
			used[j.App][k] = true
		}
	}
	for app, set := range configs {
		for k := range set {
			if !used[app][k] {
				t.Errorf("%s: computed configuration %v occurs in none of the artifact's %d workloads", app, k, len(files))
			}
		}
	}
}
