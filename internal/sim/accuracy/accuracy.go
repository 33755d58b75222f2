package accuracy

import (
	"context"
	"encoding/csv"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vodascheduler/voda/internal/algorithm"
	"github.com/vodascheduler/voda/internal/collector"
	"github.com/vodascheduler/voda/internal/placement"
	"github.com/vodascheduler/voda/internal/sim"
	"github.com/vodascheduler/voda/internal/sim/perfmodel"
	"github.com/vodascheduler/voda/internal/sim/workload"
)

// Config says which simulation gives the visited placements.
type Config struct {
	// Traces is the Pollux artifact's traces folder: one directory of
	// profiles per application.
	Traces string
	// Workload is a workload file in the Pollux format.
	Workload string
	// Allocator decides the simulation's allocations.
	Allocator algorithm.Allocator
	// Nodes and GPUsPerNode size the cluster; Interval is the scheduling
	// interval (fixed-interval mode, as the artifact runs).
	Nodes, GPUsPerNode int
	Interval           time.Duration
}

// Row is one category's errors, in percent of the profiled rate. A mean
// over no placement is NaN.
type Row struct {
	// Category is application/batch size, as the simulator groups jobs.
	Category string
	// Visited counts the distinct (workers, nodes) placements the
	// category's jobs ran on; VisitedProfiled those of them the profile
	// measured, over which Fit is taken.
	Visited, VisitedProfiled int
	// Predicted counts the profiled placements no job ran on, over which
	// Pred and Amdahl are taken.
	Predicted int
	// Fit is the mean error on the visited profiled placements.
	Fit float64
	// PredMean and PredMax are the errors of the collector's fit (with the
	// node penalty) on the placements not visited.
	PredMean, PredMax float64
	// AmdahlMean and AmdahlMax are those of Amdahl's law alone: the same
	// observations with the node count unknown.
	AmdahlMean, AmdahlMax float64
	// Fitted and AmdahlFitted are the two fits behind the predictions.
	Fitted, AmdahlFitted collector.Detail
}

// recorder wraps a model and records every placement the simulator asks
// it the rate of, by batch size. In fixed-interval mode without the
// oracle, and for a workload without durations, the simulator asks only
// for the placement a job runs on (simJob.currentRate).
type recorder struct {
	perfmodel.Model
	mu      sync.Mutex
	visited map[int]map[string][]int // batch -> placement key -> placement
}

func (r *recorder) Rate(pl []int, batch, epoch int) (float64, error) {
	r.mu.Lock()
	if batch <= 0 {
		batch = r.DefaultBatch()
	}
	byKey := r.visited[batch]
	if byKey == nil {
		byKey = map[string][]int{}
		r.visited[batch] = byKey
	}
	p := nonEmpty(pl)
	byKey[rotationKey(p)] = p
	r.mu.Unlock()
	return r.Model.Rate(pl, batch, epoch)
}

func nonEmpty(pl []int) []int {
	var out []int
	for _, w := range pl {
		if w > 0 {
			out = append(out, w)
		}
	}
	return out
}

// rotationKey names a placement by its smallest rotation: the profiles
// do not tell a ring's rotations apart.
func rotationKey(pl []int) string {
	best := ""
	for i := range pl {
		k := key(append(slices.Clone(pl[i:]), pl[:i]...))
		if i == 0 || k < best {
			best = k
		}
	}
	return best
}

func key(pl []int) string {
	s := make([]string, len(pl))
	for i, w := range pl {
		s[i] = strconv.Itoa(w)
	}
	return strings.Join(s, ".")
}

// kn is a placement as the collector sees it: workers and nodes.
type kn struct{ k, n int }

func knOf(pl []int) kn {
	k := 0
	for _, w := range pl {
		k += w
	}
	return kn{k, len(pl)}
}

// Evaluate runs the simulation and returns one row per category its jobs
// formed, sorted by category.
func Evaluate(ctx context.Context, cfg Config) ([]Row, error) {
	profiles, err := perfmodel.LoadPolluxDir(cfg.Traces)
	if err != nil {
		return nil, err
	}
	recs := make([]*recorder, len(profiles))
	models := make([]perfmodel.Model, len(profiles))
	for i, p := range profiles {
		recs[i] = &recorder{Model: p, visited: map[int]map[string][]int{}}
		models[i] = recs[i]
	}
	set, err := perfmodel.NewSet(models...)
	if err != nil {
		return nil, err
	}
	jobs, err := workload.Read(cfg.Workload, workload.FormatPollux, workload.Options{})
	if err != nil {
		return nil, err
	}
	run, err := sim.Run(ctx, jobs, sim.Options{
		Nodes: cfg.Nodes, GPUsPerNode: cfg.GPUsPerNode, Interval: cfg.Interval,
		Allocator: cfg.Allocator, Placer: placement.NewGreedy(), Models: set,
	})
	if err != nil {
		return nil, err
	}
	for _, j := range run.Jobs {
		if !j.Done {
			return nil, fmt.Errorf("accuracy: job %s of %s did not finish", j.Name, cfg.Workload)
		}
	}
	var rows []Row
	for i, p := range profiles {
		measured, err := measuredPlacements(filepath.Join(cfg.Traces, p.Name(), "placements.csv"))
		if err != nil {
			return nil, err
		}
		for _, batch := range slices.Sorted(maps.Keys(recs[i].visited)) {
			row, err := evaluate(p, batch, recs[i].visited[batch], measured)
			if err != nil {
				return nil, err
			}
			rows = append(rows, row)
		}
	}
	slices.SortFunc(rows, func(a, b Row) int { return strings.Compare(a.Category, b.Category) })
	return rows, nil
}

// measuredPlacements reads the distinct placements of a profile's
// placements.csv, each a string of workers per node.
func measuredPlacements(path string) ([][]int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil || len(recs) < 2 {
		return nil, fmt.Errorf("accuracy: %s: no placements (%v)", path, err)
	}
	col := slices.Index(recs[0], "placement")
	if col < 0 {
		return nil, fmt.Errorf("accuracy: %s: no placement column", path)
	}
	seen := map[string]bool{}
	var out [][]int
	for _, rec := range recs[1:] {
		s := strings.TrimSpace(rec[col])
		if seen[s] {
			continue
		}
		seen[s] = true
		var pl []int
		for _, c := range s {
			if c < '1' || c > '9' {
				return nil, fmt.Errorf("accuracy: %s: placement %q", path, s)
			}
			pl = append(pl, int(c-'0'))
		}
		out = append(out, pl)
	}
	return out, nil
}

// evaluate fits the collector to the visited placements of one category
// and compares its predictions with the profile on the measured ones.
func evaluate(p *perfmodel.Profiled, batch int, visited map[string][]int, measured [][]int) (Row, error) {
	cat := fmt.Sprintf("%s/%d", p.Name(), batch)
	epoch := p.DefaultEpochs() / 2
	rate := func(pl []int) (float64, error) { return p.Rate(pl, batch, epoch) }

	// The truth: the mean profiled rate of each (workers, nodes).
	truth := map[kn]float64{}
	count := map[kn]int{}
	maxWorkers := p.MaxWorkers(batch)
	for _, pl := range measured {
		c := knOf(pl)
		if c.k > maxWorkers {
			continue
		}
		r, err := rate(pl)
		if err != nil {
			return Row{}, err
		}
		truth[c] += r
		count[c]++
	}
	for c := range truth {
		truth[c] /= float64(count[c])
	}

	// One observation of one second per visited placement (workers per
	// node, up to rotation), at its profiled rate: a (workers, nodes) holds
	// the mean rate of its visited placements. The collector weights
	// (workers, nodes) equally, so the simulated seconds would not change
	// the fit.
	var withNodes, amdahl []collector.Observation
	seen := map[kn]bool{}
	for _, k := range slices.Sorted(maps.Keys(visited)) {
		pl := visited[k]
		r, err := rate(pl)
		if err != nil {
			return Row{}, err
		}
		c := knOf(pl)
		seen[c] = true
		o := collector.Observation{Job: "visited", App: cat, Workers: c.k, Nodes: c.n, Seconds: 1, Work: r}
		withNodes = append(withNodes, o)
		o.Nodes = 0
		amdahl = append(amdahl, o)
	}
	dN, dA := fitted(withNodes, cat), fitted(amdahl, cat)
	predN, predA := predict(dN), predict(dA)

	row := Row{Category: cat, Visited: len(seen), Fitted: dN, AmdahlFitted: dA}
	var fit, pred, amd []float64
	for _, c := range slices.SortedFunc(maps.Keys(truth), func(a, b kn) int {
		if a.k != b.k {
			return a.k - b.k
		}
		return a.n - b.n
	}) {
		errN := pctErr(predN(c), truth[c])
		if seen[c] {
			row.VisitedProfiled++
			fit = append(fit, errN)
			continue
		}
		row.Predicted++
		pred = append(pred, errN)
		amd = append(amd, pctErr(predA(c), truth[c]))
	}
	row.Fit, _ = meanMax(fit)
	row.PredMean, row.PredMax = meanMax(pred)
	row.AmdahlMean, row.AmdahlMax = meanMax(amd)
	return row, nil
}

// fitted feeds a fresh collector obs as one finished job of app and
// returns the fit it gives a new job of app.
func fitted(obs []collector.Observation, app string) collector.Detail {
	col := collector.New()
	col.ObserveAll(obs)
	col.Forget("visited")
	return col.Detail("new", app)
}

// predict returns the rate a fit predicts on a placement: k Rate1 / (1 +
// Serial(k-1) + NodePenalty(n-1)), as Detail documents it.
func predict(d collector.Detail) func(kn) float64 {
	return func(c kn) float64 {
		cost := 1 + d.Serial*float64(c.k-1)
		if c.n > 1 {
			cost += d.NodePenalty * float64(c.n-1)
		}
		return float64(c.k) * d.Rate1 / cost
	}
}

func pctErr(got, want float64) float64 { return 100 * math.Abs(got-want) / want }

func meanMax(xs []float64) (mean, maxv float64) {
	if len(xs) == 0 {
		return math.NaN(), math.NaN()
	}
	for _, x := range xs {
		mean += x
		maxv = math.Max(maxv, x)
	}
	return mean / float64(len(xs)), maxv
}

// Table renders rows as a Markdown table.
func Table(rows []Row) string {
	var b strings.Builder
	b.WriteString("| category | placements visited (profiled) | placements predicted | fit error, mean | prediction error, mean / max | Amdahl-only prediction error, mean / max | node penalty fitted |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %d (%d) | %d | %s | %s / %s | %s / %s | %.3g |\n",
			r.Category, r.Visited, r.VisitedProfiled, r.Predicted, pct(r.Fit),
			pct(r.PredMean), pct(r.PredMax), pct(r.AmdahlMean), pct(r.AmdahlMax), r.Fitted.NodePenalty)
	}
	return b.String()
}

func pct(x float64) string {
	if math.IsNaN(x) {
		return "–"
	}
	return fmt.Sprintf("%.1f%%", x)
}
