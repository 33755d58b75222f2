package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/vodascheduler/voda/internal/algorithm"
	"github.com/vodascheduler/voda/internal/placement"
	"github.com/vodascheduler/voda/internal/registry"
	"github.com/vodascheduler/voda/internal/sim/perfmodel"
	"github.com/vodascheduler/voda/internal/sim/polluxdata"
	"github.com/vodascheduler/voda/internal/sim/workload"
)

func polluxDir(t testing.TB) string { return polluxdata.Dir(t) }

func polluxModels(t testing.TB, dir string) *perfmodel.Set {
	t.Helper()
	apps, err := perfmodel.LoadPolluxDir(filepath.Join(dir, "traces"))
	if err != nil {
		t.Fatal(err)
	}
	var ms []perfmodel.Model
	for _, a := range apps {
		ms = append(ms, a)
	}
	set, err := perfmodel.NewSet(ms...)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func artifactTiresias(t testing.TB) algorithm.Allocator {
	t.Helper()
	p, err := registry.ParseParams([]string{"threshold=57600", "starvation=0"})
	if err != nil {
		t.Fatal(err)
	}
	a, err := algorithm.Builtin().New("Tiresias", p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func runPollux(t testing.TB, dir, wl string, models *perfmodel.Set, alloc algorithm.Allocator) (avg float64, jcts map[string]float64) {
	t.Helper()
	jobs, err := workload.Read(filepath.Join(dir, wl), workload.FormatPollux, workload.Options{})
	if err != nil {
		t.Fatal(err)
	}
	run, err := Run(context.Background(), jobs, Options{
		Nodes: 16, GPUsPerNode: 4, Interval: 60 * time.Second,
		Allocator: alloc, Placer: placement.NewGreedy(), Models: models,
	})
	if err != nil {
		t.Fatal(err)
	}
	jcts = map[string]float64{}
	sum := 0.0
	for _, j := range run.Jobs {
		if !j.Done {
			t.Fatalf("%s: job %s did not finish", wl, j.Name)
		}
		jcts[j.Name] = j.End - j.Submit
		sum += j.End - j.Submit
	}
	return sum / float64(len(run.Jobs)), jcts
}

// The artifact's Tiresias on workloads 1-8 at 1.0x load: every workload's
// average JCT within 5% of the artifact's, the mean within 3% of 4038.2 s.
func TestFidelityTiresiasPollux(t *testing.T) {
	dir := polluxDir(t)
	raw, err := os.ReadFile(filepath.Join(dir, "results-jobload", "tiresias-1.0", "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		JCTs map[string]map[string]float64 `json:"jcts"`
		Avgs map[string]float64            `json:"avgs"`
	}
	if err := json.Unmarshal(raw, &ref); err != nil {
		t.Fatal(err)
	}
	models := polluxModels(t, dir)
	mean := 0.0
	for w := 1; w <= 8; w++ {
		name := fmt.Sprintf("workload-%d", w)
		avg, jcts := runPollux(t, dir, filepath.Join("workloads", name+".csv"), models, artifactTiresias(t))
		want := ref.Avgs[name]
		dev := (avg - want) / want
		exact := 0
		for job, jct := range jcts {
			if math.Abs(jct-ref.JCTs[name][job]) < 0.5 {
				exact++
			}
		}
		t.Logf("%s: avg JCT %.1f s, artifact %.1f s (%+.2f%%); %d/%d jobs with the artifact's exact JCT", name, avg, want, 100*dev, exact, len(jcts))
		if math.Abs(dev) > 0.05 {
			t.Errorf("%s: avg JCT %.1f s deviates %+.2f%% from the artifact's %.1f s (limit 5%%)", name, avg, 100*dev, want)
		}
		mean += avg / 8
	}
	const artifactMean = 4038.2
	dev := (mean - artifactMean) / artifactMean
	t.Logf("mean avg JCT %.1f s, artifact %.1f s (%+.2f%%)", mean, artifactMean, 100*dev)
	if math.Abs(dev) > 0.03 {
		t.Errorf("mean avg JCT %.1f s deviates %+.2f%% from %.1f s (limit 3%%)", mean, 100*dev, artifactMean)
	}
}

// BenchmarkSimulateTiresiasWorkload6 is the simulator-speed figure: the
// artifact's Tiresias on Pollux workload 6 (the artifact's own Python
// simulator takes about 14 s for this run).
func BenchmarkSimulateTiresiasWorkload6(b *testing.B) {
	benchPolluxWorkload6(b, func(models *perfmodel.Set) Options {
		return Options{Allocator: artifactTiresias(b), Placer: placement.NewGreedy(), Models: models}
	})
}
