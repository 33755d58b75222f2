package workload

import (
	"math"
	"math/rand/v2"
	"strconv"
)

// GenOptions configures Generate. Zero values mean the defaults.
type GenOptions struct {
	// Jobs is the number of jobs; default 200.
	Jobs int
	// Seed makes the workload; equal options give equal workloads.
	Seed uint64
	// MeanInterarrival is the mean time between submissions in seconds
	// (exponentially distributed); default 120.
	MeanInterarrival float64
	// Apps are parametric model names, drawn uniformly per job; default
	// DefaultApps. Empty names are dropped.
	Apps []string
}

// Defaults of GenOptions.
const (
	DefaultGenJobs          = 200
	DefaultMeanInterarrival = 120.0
)

// DefaultApps returns the parametric model names Generate uses by default.
func DefaultApps() []string { return []string{"resnet50", "bert", "transformer", "ncf"} }

// Shape of generated jobs.
var (
	genRequested = []int{1, 2, 4, 8}
	// genWeights favour small jobs, as in production traces (most Philly
	// jobs use one GPU).
	genWeights            = []float64{0.5, 0.25, 0.15, 0.10}
	genMaxWorkers         = 32
	genMinDuration        = 5 * 60.0
	genMaxDuration        = 8 * 3600.0
	pcgStream      uint64 = 0x766f6461 // "voda": fixed, so only Seed matters
)

// Generate returns a synthetic workload, so that a simulation can run with
// no external data. The first job arrives at 0 and the others after
// exponential gaps; times and durations are whole seconds. Each job gets an
// app drawn uniformly, MinWorkers 1, Requested from {1, 2, 4, 8} (weighted
// 50/25/15/10 %), MaxWorkers twice that (at most 32), priority 0, the app's
// default epochs, and a Duration at Requested GPUs drawn log-uniformly
// between 5 minutes and 8 hours. Job i (in submission order, from 0) is
// named "<app>-<i>". The same options always give the same jobs: the
// randomness is a PCG generator seeded with Seed.
func Generate(opts GenOptions) []Job {
	n := opts.Jobs
	if n <= 0 {
		n = DefaultGenJobs
	}
	mean := opts.MeanInterarrival
	if !(mean > 0) || math.IsInf(mean, 0) {
		mean = DefaultMeanInterarrival
	}
	var apps []string
	for _, a := range opts.Apps {
		if a != "" {
			apps = append(apps, a)
		}
	}
	if len(apps) == 0 {
		apps = DefaultApps()
	}

	rng := rand.New(rand.NewPCG(opts.Seed, pcgStream))
	logMin, logMax := math.Log(genMinDuration), math.Log(genMaxDuration)
	jobs := make([]Job, n)
	t := 0.0
	for i := range jobs {
		if i > 0 {
			t += rng.ExpFloat64() * mean
		}
		app := apps[rng.IntN(len(apps))]
		req := genRequested[pick(rng, genWeights)]
		dur := math.Exp(logMin + rng.Float64()*(logMax-logMin))
		jobs[i] = Job{
			Name:       app + "-" + strconv.Itoa(i),
			Submit:     math.Round(t),
			App:        app,
			MinWorkers: 1,
			MaxWorkers: min(2*req, genMaxWorkers),
			Requested:  req,
			Duration:   math.Max(1, math.Round(dur)),
		}
	}
	Sort(jobs) // rounding can tie submit times
	return jobs
}

// pick draws an index with the given weights (summing to 1).
func pick(rng *rand.Rand, weights []float64) int {
	u := rng.Float64()
	for i, w := range weights {
		if u < w {
			return i
		}
		u -= w
	}
	return len(weights) - 1
}
