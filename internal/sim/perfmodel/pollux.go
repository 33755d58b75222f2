package perfmodel

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/vodascheduler/voda/internal/sim/interp"
)

// pollux epochs per application, as the artifact trains them.
var polluxEpochs = map[string]int{
	"bert": 2, "cifar10": 100, "ncf": 10, "imagenet": 90, "deepspeech2": 80, "yolov3": 50,
}

// polluxMaxLocal overrides the largest local batch of an application.
var polluxMaxLocal = map[string]int{"yolov3": 8}

type validation struct {
	batch                                 int
	progress, iteration, gradSqr, gradVar []float64
}

type stepRow struct {
	local          float64
	step, syncTime float64
}

// Profiled is an application measured by the Pollux artifact: step times
// per placement and local batch size, and gradient statistics per epoch
// and global batch size.
type Profiled struct {
	name      string
	epochs    int
	initBatch int
	maxBatch  int
	minLocal  int
	maxLocal  int
	valid     []validation // sorted by batch
	// placements maps a canonical placement key to its rows sorted by
	// local batch size.
	placements map[string][]stepRow
	// spread interpolates (nodes, replicas, local) -> (step, sync) for
	// placements that were not measured.
	spread *interp.Linear
	// points keeps the spread data for the nearest-point fallback.
	points [][]float64
	values [][]float64

	mu    sync.Mutex // guards cache; runs may share a model
	cache map[throughputKey][2]float64
}

type throughputKey struct {
	placement string
	local     int
}

// LoadPolluxDir loads every application directory under dir (each holding
// placements.csv, scalability.csv and validation-<batch>.csv files).
func LoadPolluxDir(dir string) ([]*Profiled, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read profiles: %w", err)
	}
	var out []*Profiled
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		sub := filepath.Join(dir, e.Name())
		if _, err := os.Stat(filepath.Join(sub, "placements.csv")); err != nil {
			continue
		}
		p, err := LoadPollux(sub)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("read profiles: no application directories with placements.csv under %s", dir)
	}
	return out, nil
}

// LoadPollux loads one application directory.
func LoadPollux(dir string) (*Profiled, error) {
	name := filepath.Base(dir)
	p := &Profiled{name: name, placements: map[string][]stepRow{}, cache: map[throughputKey][2]float64{}}
	wrap := func(err error) error { return fmt.Errorf("load profile %s: %w", dir, err) }

	files, err := filepath.Glob(filepath.Join(dir, "validation-*.csv"))
	if err != nil {
		return nil, wrap(err)
	}
	for _, f := range files {
		base := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "validation-"), ".csv")
		b, err := strconv.Atoi(base)
		if err != nil || b < 1 {
			return nil, wrap(fmt.Errorf("%s: batch size %q in the file name is not a positive integer", f, base))
		}
		rows, err := readCSV(f, "progress", "iteration", "grad_sqr", "grad_var")
		if err != nil {
			return nil, wrap(err)
		}
		v := validation{batch: b}
		for _, r := range rows {
			v.progress = append(v.progress, r[0])
			v.iteration = append(v.iteration, r[1])
			v.gradSqr = append(v.gradSqr, r[2])
			v.gradVar = append(v.gradVar, r[3])
		}
		if len(rows) == 0 {
			return nil, wrap(fmt.Errorf("%s: no rows", f))
		}
		p.valid = append(p.valid, v)
	}
	if len(p.valid) == 0 {
		return nil, wrap(errors.New("no validation-<batch>.csv files"))
	}
	sort.Slice(p.valid, func(i, j int) bool { return p.valid[i].batch < p.valid[j].batch })
	p.initBatch = p.valid[0].batch
	p.maxBatch = p.valid[len(p.valid)-1].batch
	p.epochs = polluxEpochs[name]
	minRows := math.MaxInt
	for _, v := range p.valid {
		minRows = min(minRows, len(v.progress))
	}
	if p.epochs == 0 || p.epochs > minRows {
		p.epochs = minRows
	}

	// Measured placements.
	f, err := os.Open(filepath.Join(dir, "placements.csv"))
	if err != nil {
		return nil, wrap(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, wrap(fmt.Errorf("placements.csv: %w", err))
	}
	if len(recs) < 2 {
		return nil, wrap(errors.New("placements.csv: no rows"))
	}
	col, err := columns(recs[0], "placement", "local_bsz", "step_time", "sync_time")
	if err != nil {
		return nil, wrap(fmt.Errorf("placements.csv: %w", err))
	}
	type group struct{ nodes, replicas, local float64 }
	sums := map[group][3]float64{} // step, sync, count
	var order []group
	p.minLocal, p.maxLocal = math.MaxInt, 0
	for i, rec := range recs[1:] {
		digits := strings.TrimSpace(rec[col[0]])
		var pl []int
		for _, c := range digits {
			if c < '1' || c > '9' {
				return nil, wrap(fmt.Errorf("placements.csv line %d: placement %q: want digits 1-9", i+2, digits))
			}
			pl = append(pl, int(c-'0'))
		}
		var nums [3]float64
		for k := 1; k < 4; k++ {
			v, err := strconv.ParseFloat(strings.TrimSpace(rec[col[k]]), 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				return nil, wrap(fmt.Errorf("placements.csv line %d: %s %q: not a non-negative number", i+2, recs[0][col[k]], rec[col[k]]))
			}
			nums[k-1] = v
		}
		if len(pl) == 0 {
			return nil, wrap(fmt.Errorf("placements.csv line %d: empty placement", i+2))
		}
		key := placementKey(canonical(pl))
		p.placements[key] = append(p.placements[key], stepRow{local: nums[0], step: nums[1], syncTime: nums[2]})
		p.minLocal = min(p.minLocal, int(nums[0]))
		p.maxLocal = max(p.maxLocal, int(nums[0]))
		g := group{float64(len(pl)), float64(sum(pl)), nums[0]}
		s, seen := sums[g]
		if !seen {
			order = append(order, g)
		}
		sums[g] = [3]float64{s[0] + nums[1], s[1] + nums[2], s[2] + 1}
	}
	for _, rows := range p.placements {
		sort.SliceStable(rows, func(i, j int) bool { return rows[i].local < rows[j].local })
	}
	if ml, ok := polluxMaxLocal[name]; ok {
		p.maxLocal = ml
	}
	// Averaged measured placements plus the scalability sweep feed the
	// interpolator for unmeasured placements, sorted like a groupby.
	sort.Slice(order, func(i, j int) bool {
		a, b := order[i], order[j]
		if a.nodes != b.nodes {
			return a.nodes < b.nodes
		}
		if a.replicas != b.replicas {
			return a.replicas < b.replicas
		}
		return a.local < b.local
	})
	for _, g := range order {
		s := sums[g]
		p.points = append(p.points, []float64{g.nodes, g.replicas, g.local})
		p.values = append(p.values, []float64{s[0] / s[2], s[1] / s[2]})
	}
	scal, err := readCSV(filepath.Join(dir, "scalability.csv"), "num_nodes", "num_replicas", "local_bsz", "step_time", "sync_time")
	if err != nil {
		return nil, wrap(err)
	}
	for _, r := range scal {
		p.points = append(p.points, []float64{r[0], r[1], r[2]})
		p.values = append(p.values, []float64{r[3], r[4]})
	}
	p.spread, err = interp.NewLinear(p.points, p.values)
	if err != nil {
		return nil, wrap(fmt.Errorf("interpolate step times: %w", err))
	}
	return p, nil
}

func columns(header []string, names ...string) ([]int, error) {
	idx := make([]int, len(names))
	for i, n := range names {
		idx[i] = -1
		for j, h := range header {
			if strings.TrimSpace(h) == n {
				idx[i] = j
			}
		}
		if idx[i] < 0 {
			return nil, fmt.Errorf("missing column %q", n)
		}
	}
	return idx, nil
}

// readCSV reads the named numeric columns of a headed CSV file.
func readCSV(path string, names ...string) ([][]float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := csv.NewReader(f)
	header, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: header: %w", path, err)
	}
	col, err := columns(header, names...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var out [][]float64
	for line := 2; ; line++ {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		row := make([]float64, len(names))
		for i, c := range col {
			v, err := strconv.ParseFloat(strings.TrimSpace(rec[c]), 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("%s line %d: %s %q: not a number", path, line, names[i], rec[c])
			}
			row[i] = v
		}
		out = append(out, row)
	}
	return out, nil
}

func placementKey(p []int) string {
	var b strings.Builder
	for i, n := range p {
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(strconv.Itoa(n))
	}
	return b.String()
}

// Name implements Model.
func (p *Profiled) Name() string { return p.name }

// DefaultEpochs implements Model.
func (p *Profiled) DefaultEpochs() int { return p.epochs }

// DefaultBatch implements Model: the smallest validated batch size.
func (p *Profiled) DefaultBatch() int { return p.initBatch }

// MaxWorkers implements Model: every worker needs at least the smallest
// measured local batch, and the simulator's spread data reach 64 GPUs.
func (p *Profiled) MaxWorkers(batch int) int {
	if batch <= 0 {
		batch = p.initBatch
	}
	return max(1, min(batch/p.minLocal, 64))
}

// EpochProgress implements Model: the least progress any validated batch
// size needed to finish e epochs.
func (p *Profiled) EpochProgress(e int) float64 {
	if e <= 0 {
		return 0
	}
	best := math.Inf(1)
	for _, v := range p.valid {
		i := min(e, len(v.progress)) - 1
		best = min(best, v.progress[i])
	}
	return best
}

// Batching returns the atomic (per-step, per-worker) batch size and the
// gradient accumulation steps a job with global batch size batch uses on
// replicas workers.
func (p *Profiled) Batching(batch, replicas int) (atomic, accum int) {
	const eps = 1e-8
	local := int(math.Ceil(float64(batch)/float64(replicas) - eps))
	accum = int(math.Ceil(float64(local)/float64(p.maxLocal)-eps)) - 1
	if replicas == 1 && batch > p.initBatch {
		accum = max(1, accum)
	}
	accum = max(accum, 0)
	atomic = int(math.Ceil(float64(local)/float64(accum+1) - eps))
	count := replicas * (accum + 1)
	atomic = min(atomic, p.maxBatch/count)
	return max(atomic, 1), accum
}

// Rate implements Model.
func (p *Profiled) Rate(placement []int, batch, epoch int) (float64, error) {
	if sum(placement) == 0 {
		return 0, nil
	}
	if batch <= 0 {
		batch = p.initBatch
	}
	b, _, _, iter, err := p.Iteration(placement, batch)
	if err != nil {
		return 0, err
	}
	sqr, vr := p.GradStats(b, epoch)
	scale := float64(b) / float64(p.initBatch)
	gain := 1.0
	if d := vr/scale + sqr; d > 0 {
		gain = (vr + sqr) / d
	}
	return gain / iter, nil
}

// Iteration returns how a global batch size runs on a non-empty
// placement (the effective batch, the atomic batch and the accumulation
// steps, as Batching splits it) and the true seconds per optimizer step:
// the step time plus, for each accumulation step, the step without its
// synchronisation.
func (p *Profiled) Iteration(placement []int, batch int) (eff, atomic, accum int, seconds float64, err error) {
	pl := canonical(placement)
	replicas := sum(pl)
	if replicas == 0 {
		return 0, 0, 0, 0, fmt.Errorf("%s: empty placement", p.name)
	}
	atomic, accum = p.Batching(batch, replicas)
	step, syncTime, err := p.Throughput(pl, atomic)
	if err != nil {
		return 0, 0, 0, 0, err
	}
	seconds = step + float64(accum)*(step-syncTime)
	if !(seconds > 0) {
		return 0, 0, 0, 0, fmt.Errorf("%s: non-positive iteration time for placement %v", p.name, placement)
	}
	return replicas * atomic * (accum + 1), atomic, accum, seconds, nil
}

// polluxPinned fixes the batch of an application the artifact never
// adapts: ncf runs a global batch of 32768 on one replica.
var polluxPinned = map[string]int{"ncf": 32768}

// BatchLimits returns the application's initial and largest validated
// global batch sizes and its smallest and largest measured local batch.
func (p *Profiled) BatchLimits() (initBatch, maxBatch, minLocal, maxLocal int) {
	return p.initBatch, p.maxBatch, p.minLocal, p.maxLocal
}

// Pinned returns the batch size at which the Pollux artifact runs every
// job of the application on one replica, if it pins one.
func (p *Profiled) Pinned() (int, bool) {
	b, ok := polluxPinned[p.name]
	return b, ok
}

// GradStats returns the gradient's squared norm and variance during epoch
// at global batch size b, interpolated between the validated batch sizes
// around b (clamped to the validated range).
func (p *Profiled) GradStats(b, epoch int) (sqr, vr float64) {
	lo, hi := p.bracket(b)
	row := func(v *validation) (float64, float64) {
		i := min(max(epoch, 0), len(v.gradSqr)-1)
		return v.gradSqr[i], v.gradVar[i]
	}
	ls, lv := row(&p.valid[lo])
	if lo == hi {
		return ls, lv
	}
	us, uv := row(&p.valid[hi])
	lb, ub := float64(p.valid[lo].batch), float64(p.valid[hi].batch)
	x := float64(b)
	return ((x-lb)*us + (ub-x)*ls) / (ub - lb), ((x-lb)*uv + (ub-x)*lv) / (ub - lb)
}

func (p *Profiled) bracket(b int) (lo, hi int) {
	if b <= p.valid[0].batch {
		return 0, 0
	}
	last := len(p.valid) - 1
	if b >= p.valid[last].batch {
		return last, last
	}
	hi = sort.Search(len(p.valid), func(i int) bool { return p.valid[i].batch >= b })
	if p.valid[hi].batch == b {
		return hi, hi
	}
	return hi - 1, hi
}

// Throughput returns the step time and its synchronisation part for a
// canonical placement and atomic batch size. Measured placements are
// interpolated linearly in the local batch size; others across (nodes,
// replicas, local batch) from the averaged measurements and the
// scalability sweep, with nodes capped at 16 as the artifact does.
func (p *Profiled) Throughput(pl []int, local int) (step, syncTime float64, err error) {
	key := throughputKey{placementKey(pl), local}
	p.mu.Lock()
	defer p.mu.Unlock()
	if v, ok := p.cache[key]; ok {
		return v[0], v[1], nil
	}
	if rows, ok := p.placements[key.placement]; ok {
		step, syncTime = interp1(rows, float64(local))
	} else {
		nodes := min(len(pl), 16)
		q := []float64{float64(nodes), float64(sum(pl)), float64(local)}
		out := make([]float64, 2)
		if !p.spread.At(q, out) {
			// Outside the measured hull (say, 8 GPUs on one node): model
			// the job as spread over 4-GPU nodes, then fall back to the
			// nearest measurement.
			q[0] = math.Max(q[0], math.Ceil(q[1]/4))
			if !p.spread.At(q, out) {
				copy(out, p.values[p.nearest(q)])
			}
		}
		step, syncTime = out[0], out[1]
	}
	if math.IsNaN(step) || math.IsNaN(syncTime) {
		return 0, 0, fmt.Errorf("%s: no step time for placement %v at local batch %d", p.name, pl, local)
	}
	p.cache[key] = [2]float64{step, syncTime}
	return step, syncTime, nil
}

func (p *Profiled) nearest(q []float64) int {
	best, bestD := 0, math.Inf(1)
	for i, pt := range p.points {
		d := 0.0
		for k := range q {
			d += (pt[k] - q[k]) * (pt[k] - q[k])
		}
		if d < bestD {
			best, bestD = i, d
		}
	}
	return best
}

// interp1 interpolates linearly in the local batch size, clamping to the
// measured range.
func interp1(rows []stepRow, x float64) (float64, float64) {
	if x <= rows[0].local {
		return rows[0].step, rows[0].syncTime
	}
	last := rows[len(rows)-1]
	if x >= last.local {
		return last.step, last.syncTime
	}
	i := sort.Search(len(rows), func(i int) bool { return rows[i].local >= x })
	a, b := rows[i-1], rows[i]
	t := (x - a.local) / (b.local - a.local)
	return a.step + t*(b.step-a.step), a.syncTime + t*(b.syncTime-a.syncTime)
}
