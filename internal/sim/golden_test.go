package sim

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/vodascheduler/voda/internal/placement"
	"github.com/vodascheduler/voda/internal/sim/report"
	"github.com/vodascheduler/voda/internal/sim/workload"
)

var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/golden-runs.json from the current engine")

const goldenFile = "testdata/golden-runs.json"

// goldenCase is one replay whose every result the engine must keep.
type goldenCase struct {
	name      string
	jobs      int
	seed      uint64
	alg       string
	params    []string
	nodes     int
	perNode   int
	interval  time.Duration
	oracle    bool
	greedy    bool
	rateLimit time.Duration
}

func goldenCases() []goldenCase {
	return []goldenCase{
		{name: "ElasticFIFO/300/seed1", jobs: 300, seed: 1, alg: "ElasticFIFO", nodes: 16, perNode: 4},
		{name: "ElasticFIFO/800/seed2", jobs: 800, seed: 2, alg: "ElasticFIFO", nodes: 8, perNode: 4},
		{name: "ElasticFIFO/300/seed3/interval", jobs: 300, seed: 3, alg: "ElasticFIFO", nodes: 16, perNode: 4, interval: time.Minute},
		{name: "FIFO/600/seed1/greedy", jobs: 600, seed: 1, alg: "FIFO", nodes: 8, perNode: 4, greedy: true},
		{name: "SRJF/300/seed4/oracle", jobs: 300, seed: 4, alg: "SRJF", nodes: 8, perNode: 4, oracle: true},
		{name: "ElasticSRJF/300/seed5", jobs: 300, seed: 5, alg: "ElasticSRJF", nodes: 4, perNode: 8},
		{name: "Tiresias/600/seed1", jobs: 600, seed: 1, alg: "Tiresias", params: []string{"threshold=57600", "starvation=0"}, nodes: 8, perNode: 4},
		{name: "Tiresias/300/seed2/interval/greedy", jobs: 300, seed: 2, alg: "Tiresias", nodes: 8, perNode: 4, interval: time.Minute, greedy: true},
		{name: "ElasticTiresias/300/seed6", jobs: 300, seed: 6, alg: "ElasticTiresias", nodes: 8, perNode: 4, rateLimit: 10 * time.Second},
		{name: "FfDLOptimizer/200/seed7", jobs: 200, seed: 7, alg: "FfDLOptimizer", nodes: 4, perNode: 4},
		{name: "AFS-L/300/seed8", jobs: 300, seed: 8, alg: "AFS-L", nodes: 8, perNode: 4},
		{name: "AFS-L/300/seed9/oracle/interval", jobs: 300, seed: 9, alg: "AFS-L", nodes: 8, perNode: 4, oracle: true, interval: time.Minute},
	}
}

// goldenDigest hashes everything a run decides: every job's result in
// workload order, every change of a job's GPUs in the order it happened,
// the end time and the cycle counts. Floats are written exactly.
func goldenDigest(r *report.Run) string {
	h := sha256.New()
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	for _, j := range r.Jobs {
		fmt.Fprintf(h, "job %s %s %s %s %s %v %d %d %d %d %d %s\n", j.Name, j.App, f(j.Submit), f(j.Start), f(j.End), j.Done,
			j.MinWorkers, j.MaxWorkers, j.Requested, j.Restarts, j.Migrations, f(j.GPUSeconds))
	}
	for _, c := range r.Changes {
		fmt.Fprintf(h, "change %s %s %d\n", f(c.Time), c.Job, c.GPUs)
	}
	fmt.Fprintf(h, "end %s cycles %d spread %d\n", f(r.EndTime), r.Cycles, r.SpreadJobCycles)
	return hex.EncodeToString(h.Sum(nil))
}

type goldenRun struct {
	Digest    string  `json:"digest"`
	AvgJCT    float64 `json:"avg_jct"`
	Completed int     `json:"completed"`
	Cycles    int     `json:"cycles"`
}

// TestGoldenRuns replays generated workloads under every algorithm, both
// modes, both placers and oracle estimates, and compares each run's digest
// with the one the engine produced before its hot loops were cut down to
// live jobs (testdata/golden-runs.json; -update-golden rewrites it). A
// faster engine must decide exactly the same.
func TestGoldenRuns(t *testing.T) {
	models := parametricSet(t)
	got := map[string]goldenRun{}
	for _, c := range goldenCases() {
		jobs := workload.Generate(workload.GenOptions{Jobs: c.jobs, Seed: c.seed})
		o := Options{
			Nodes: c.nodes, GPUsPerNode: c.perNode, Interval: c.interval, Estimator: estimatorOf(c.oracle),
			RateLimit: c.rateLimit, Allocator: newAlloc(t, c.alg, c.params...), Models: models,
		}
		placer := placement.TopologyName
		if c.greedy {
			placer = "greedy"
		}
		pl, err := placement.Builtin().New(placer, nil)
		if err != nil {
			t.Fatal(err)
		}
		o.Placer = pl
		r := run(t, jobs, o)
		s := report.Summarize(r)
		got[c.name] = goldenRun{Digest: goldenDigest(r), AvgJCT: s.AvgJCT, Completed: s.Completed, Cycles: r.Cycles}
	}
	if *updateGolden {
		b, err := json.MarshalIndent(got, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(goldenFile), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(goldenFile, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	b, err := os.ReadFile(goldenFile)
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]goldenRun
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	if len(want) != len(got) {
		t.Errorf("%s has %d runs, the test makes %d", goldenFile, len(want), len(got))
	}
	for _, c := range goldenCases() {
		if g, w := got[c.name], want[c.name]; g != w {
			t.Errorf("%s: got %+v, golden %+v", c.name, g, w)
		}
	}
}

// estimatorOf is the oracle when oracle is set, else online estimates by
// worker count.
func estimatorOf(oracle bool) EstimatorKind {
	if oracle {
		return EstimatorOracle
	}
	return EstimatorWorkers
}
