package progress

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"

	"github.com/vodascheduler/voda/internal/goodput"
)

// Limits of a report's fields (docs/progress.md). They bound what one
// report can make the server store or compute, and reject values no
// training run produces.
const (
	MaxGeneration   = 128
	MaxSteps        = 1e15
	MaxSamples      = 1e18
	MaxEpochs       = 1e6
	MaxBatchSize    = 1e9
	MaxStepSeconds  = 86400
	MaxGradient     = 1e30
	MaxAccumulation = goodput.MaxAccum // the advice never asks for more (docs/progress.md)
	MaxMetrics      = 16
	MaxMetricName   = 64
	DefaultInterval = 30 // seconds between reports Voda asks for
)

var metricName = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// Wire is a report as it arrives: the required fields are pointers, so
// that a missing one is told from a zero.
type Wire struct {
	Generation      *string            `json:"generation"`
	Workers         *int64             `json:"workers"`
	Nodes           int64              `json:"nodes,omitempty"`
	Steps           *int64             `json:"steps"`
	Samples         *int64             `json:"samples,omitempty"`
	Epoch           *float64           `json:"epoch"`
	TotalEpochs     *float64           `json:"totalEpochs,omitempty"`
	GlobalBatchSize *int64             `json:"globalBatchSize,omitempty"`
	LocalBatchSize  *int64             `json:"localBatchSize,omitempty"`
	StepSeconds     *float64           `json:"stepSeconds,omitempty"`
	GradSqNorm      *float64           `json:"gradSqNorm,omitempty"`
	GradVariance    *float64           `json:"gradVariance,omitempty"`
	Metrics         map[string]float64 `json:"metrics,omitempty"`
	Final           bool               `json:"final,omitempty"`
	// The job's batch bounds and how it splits its batch (see Batch).
	InitBatchSize     *int64 `json:"initBatchSize,omitempty"`
	MaxBatchSize      *int64 `json:"maxBatchSize,omitempty"`
	MinLocalBatchSize *int64 `json:"minLocalBatchSize,omitempty"`
	MaxLocalBatchSize *int64 `json:"maxLocalBatchSize,omitempty"`
	AccumulationSteps *int64 `json:"accumulationSteps,omitempty"`
}

// Batch is what a report says of the job's batch size beyond the sizes
// it runs: the global batch its hyperparameters were tuned for (Init),
// the largest it accepts (Max; 0 or Init: the batch is fixed), the least
// and most samples a worker's step takes (MinLocal, MaxLocal; 0: no
// bound), and the extra gradient-accumulation steps it runs now
// (Accumulation, nil when not said).
type Batch struct {
	Init         int64  `json:"init,omitempty"`
	Max          int64  `json:"max,omitempty"`
	MinLocal     int64  `json:"minLocal,omitempty"`
	MaxLocal     int64  `json:"maxLocal,omitempty"`
	Accumulation *int64 `json:"accumulation,omitempty"`
}

// Adaptive reports whether the job lets Voda choose its batch size.
func (b Batch) Adaptive() bool { return b.Init > 0 && b.Max > b.Init }

// Report is a checked report. Optional fields absent from the wire are
// zero (Samples, TotalEpochs, batch sizes, StepSeconds) or nil.
type Report struct {
	Generation      string             `json:"generation"`
	Workers         int                `json:"workers"`
	Nodes           int                `json:"nodes,omitempty"`
	Steps           int64              `json:"steps"`
	Samples         int64              `json:"samples,omitempty"`
	Epoch           float64            `json:"epoch"`
	TotalEpochs     float64            `json:"totalEpochs,omitempty"`
	GlobalBatchSize int64              `json:"globalBatchSize,omitempty"`
	LocalBatchSize  int64              `json:"localBatchSize,omitempty"`
	StepSeconds     float64            `json:"stepSeconds,omitempty"`
	GradSqNorm      *float64           `json:"gradSqNorm,omitempty"`
	GradVariance    *float64           `json:"gradVariance,omitempty"`
	Metrics         map[string]float64 `json:"metrics,omitempty"`
	Final           bool               `json:"final,omitempty"`
	Batch           Batch              `json:"batch,omitzero"`
}

// FieldError is why a report was refused: the field (JSON name, e.g.
// "metrics[loss]") and the reason.
type FieldError struct {
	Field  string
	Reason string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Reason }

// Check validates w for a job that may hold at most maxWorkers workers
// and returns the report.
func (w Wire) Check(maxWorkers int) (Report, *FieldError) {
	var r Report
	switch {
	case w.Generation == nil:
		return r, required("generation")
	case len(*w.Generation) == 0 || len(*w.Generation) > MaxGeneration || !printableASCII(*w.Generation):
		return r, &FieldError{"generation", fmt.Sprintf("must be 1 to %d printable ASCII characters", MaxGeneration)}
	case w.Workers == nil:
		return r, required("workers")
	case *w.Workers < 1 || *w.Workers > int64(maxWorkers):
		return r, outside("workers", float64(*w.Workers), 1, float64(maxWorkers))
	case w.Nodes < 0 || w.Nodes > *w.Workers:
		return r, &FieldError{"nodes", fmt.Sprintf("%d is outside [0, workers %d] (0: unknown)", w.Nodes, *w.Workers)}
	case w.Steps == nil:
		return r, required("steps")
	case w.Epoch == nil:
		return r, required("epoch")
	}
	r = Report{Generation: *w.Generation, Workers: int(*w.Workers), Nodes: int(w.Nodes), Steps: *w.Steps, Epoch: *w.Epoch,
		GradSqNorm: w.GradSqNorm, GradVariance: w.GradVariance, Final: w.Final}
	if err := checkCount("steps", r.Steps, MaxSteps); err != nil {
		return r, err
	}
	if err := checkNumber("epoch", r.Epoch, 0, MaxEpochs, true); err != nil {
		return r, err
	}
	if w.Samples != nil {
		if err := checkCount("samples", *w.Samples, MaxSamples); err != nil {
			return r, err
		}
		r.Samples = *w.Samples
	}
	if w.TotalEpochs != nil {
		if err := checkNumber("totalEpochs", *w.TotalEpochs, 0, MaxEpochs, false); err != nil {
			return r, err
		}
		r.TotalEpochs = *w.TotalEpochs
	}
	for _, b := range []struct {
		field string
		v     *int64
		dst   *int64
	}{{"globalBatchSize", w.GlobalBatchSize, &r.GlobalBatchSize}, {"localBatchSize", w.LocalBatchSize, &r.LocalBatchSize}} {
		if b.v == nil {
			continue
		}
		if *b.v < 1 || *b.v > MaxBatchSize {
			return r, outside(b.field, float64(*b.v), 1, MaxBatchSize)
		}
		*b.dst = *b.v
	}
	if w.StepSeconds != nil {
		if err := checkNumber("stepSeconds", *w.StepSeconds, 0, MaxStepSeconds, false); err != nil {
			return r, err
		}
		r.StepSeconds = *w.StepSeconds
	}
	for _, g := range []struct {
		field string
		v     *float64
	}{{"gradSqNorm", w.GradSqNorm}, {"gradVariance", w.GradVariance}} {
		if g.v == nil {
			continue
		}
		if err := checkNumber(g.field, *g.v, 0, MaxGradient, true); err != nil {
			return r, err
		}
	}
	if err := w.checkBatch(&r); err != nil {
		return r, err
	}
	if len(w.Metrics) > MaxMetrics {
		return r, &FieldError{"metrics", fmt.Sprintf("has %d entries; at most %d", len(w.Metrics), MaxMetrics)}
	}
	names := make([]string, 0, len(w.Metrics))
	for k := range w.Metrics {
		names = append(names, k)
	}
	slices.Sort(names) // the first bad one, whatever the map's order
	for _, k := range names {
		field := "metrics[" + k + "]"
		if len(k) == 0 || len(k) > MaxMetricName || !metricName.MatchString(k) {
			return r, &FieldError{field, fmt.Sprintf("a metric's name is 1 to %d characters of A-Za-z0-9_.-", MaxMetricName)}
		}
		if v := w.Metrics[k]; math.IsNaN(v) || math.IsInf(v, 0) {
			return r, &FieldError{field, "must be a finite number"}
		}
	}
	if len(w.Metrics) > 0 {
		r.Metrics = w.Metrics
	}
	return r, nil
}

// checkBatch checks the batch bounds into r.Batch: each within its
// limits, and consistent with each other and with the sizes reported.
func (w Wire) checkBatch(r *Report) *FieldError {
	b := &r.Batch
	for _, f := range []struct {
		field string
		v     *int64
		dst   *int64
	}{{"initBatchSize", w.InitBatchSize, &b.Init}, {"maxBatchSize", w.MaxBatchSize, &b.Max},
		{"minLocalBatchSize", w.MinLocalBatchSize, &b.MinLocal}, {"maxLocalBatchSize", w.MaxLocalBatchSize, &b.MaxLocal}} {
		if f.v == nil {
			continue
		}
		if *f.v < 1 || *f.v > MaxBatchSize {
			return outside(f.field, float64(*f.v), 1, MaxBatchSize)
		}
		*f.dst = *f.v
	}
	if a := w.AccumulationSteps; a != nil {
		if err := checkCount("accumulationSteps", *a, MaxAccumulation); err != nil {
			return err
		}
		b.Accumulation = a
	}
	switch {
	case b.Init == 0 && (b.Max > 0 || b.MinLocal > 0 || b.MaxLocal > 0):
		return &FieldError{"initBatchSize", "required with maxBatchSize, minLocalBatchSize or maxLocalBatchSize"}
	case b.Max > 0 && b.Max < b.Init:
		return &FieldError{"maxBatchSize", fmt.Sprintf("%d is below initBatchSize %d", b.Max, b.Init)}
	case b.MaxLocal > 0 && b.MinLocal > b.MaxLocal:
		return &FieldError{"minLocalBatchSize", fmt.Sprintf("%d is above maxLocalBatchSize %d", b.MinLocal, b.MaxLocal)}
	case b.MinLocal > max(b.Max, b.Init):
		return &FieldError{"minLocalBatchSize", fmt.Sprintf("%d is above the largest global batch size %d", b.MinLocal, max(b.Max, b.Init))}
	case r.LocalBatchSize > 0 && r.GlobalBatchSize > 0 && r.LocalBatchSize*int64(r.Workers) > r.GlobalBatchSize:
		return &FieldError{"localBatchSize", fmt.Sprintf("%d on %d workers is more than globalBatchSize %d", r.LocalBatchSize, r.Workers, r.GlobalBatchSize)}
	case b.Accumulation != nil && r.LocalBatchSize > 0 && r.GlobalBatchSize > 0 &&
		r.LocalBatchSize*int64(r.Workers)*(*b.Accumulation+1) != r.GlobalBatchSize:
		return &FieldError{"accumulationSteps", fmt.Sprintf("%d: localBatchSize %d x workers %d x (accumulationSteps + 1) is not globalBatchSize %d",
			*b.Accumulation, r.LocalBatchSize, r.Workers, r.GlobalBatchSize)}
	}
	return nil
}

func required(field string) *FieldError { return &FieldError{field, "required"} }

func outside(field string, v, lo, hi float64) *FieldError {
	return &FieldError{field, fmt.Sprintf("%s is outside [%s, %s]", num(v), num(lo), num(hi))}
}

func num(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func checkCount(field string, v int64, max float64) *FieldError {
	if v < 0 || float64(v) > max {
		return outside(field, float64(v), 0, max)
	}
	return nil
}

// checkNumber checks a finite number in [lo, hi], or (lo, hi] when
// !withLo.
func checkNumber(field string, v, lo, hi float64, withLo bool) *FieldError {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return &FieldError{field, "must be a finite number"}
	case withLo && v < lo, !withLo && v <= lo, v > hi:
		if withLo {
			return outside(field, v, lo, hi)
		}
		return &FieldError{field, fmt.Sprintf("%s is outside (%s, %s]", num(v), num(lo), num(hi))}
	}
	return nil
}

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
