package progress

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vodascheduler/voda/internal/goodput"
)

// adviceMaxWorkers is the server's --max-workers in these tests.
const adviceMaxWorkers = 4096

// adviceCase is a report whose advice is checked, and the allocation it
// is advised for.
type adviceCase struct {
	w     Wire
	alloc Allocation
}

// hostileBounds is issue 30's report: bounds within the report limits
// (initial batch 4, maximum 10^9, one sample a worker's step) and a
// gradient variance at the limit, on 4 workers.
func hostileBounds() Wire {
	return Wire{Generation: ptr("g"), Workers: ptr[int64](4), Steps: ptr[int64](10), Epoch: ptr(0.5),
		GlobalBatchSize: ptr[int64](4), LocalBatchSize: ptr[int64](1), AccumulationSteps: ptr[int64](0),
		StepSeconds: ptr(0.1), GradSqNorm: ptr(1e-30), GradVariance: ptr(1e30),
		InitBatchSize: ptr[int64](4), MaxBatchSize: ptr[int64](1e9), MaxLocalBatchSize: ptr[int64](1)}
}

// checkAdvice reports what is wrong with the advice the reply to c's
// report carries: a report that runs it (its workers, size, local size
// and accumulation steps, the rest as c's) must be accepted, the advice
// must keep to the job's bounds, and lrScale must be in (0,
// goodput.MaxGain] and at most the batch's ratio to the initial one when
// that is above 1. The advice is nil when c's report is refused or gets
// none.
func checkAdvice(c adviceCase) (*Advice, error) {
	r, ferr := c.w.Check(adviceMaxWorkers)
	if ferr != nil {
		return nil, nil
	}
	s, out, ferr := Ingest(nil, r, at(0), c.alloc)
	if ferr != nil {
		return nil, fmt.Errorf("the first report refused: %v", ferr)
	}
	a := out.Advice
	if a == nil {
		return nil, nil
	}
	next := c.w
	next.Generation = ptr(*c.w.Generation + "-advised") // the allocation may differ from its workers
	next.Workers = ptr(int64(a.Workers))
	next.Nodes = 0
	next.GlobalBatchSize, next.LocalBatchSize, next.AccumulationSteps = ptr(int64(a.Size)), ptr(int64(a.LocalSize)), ptr(int64(a.AccumulationSteps))
	nr, ferr := next.Check(adviceMaxWorkers)
	if ferr != nil {
		return a, fmt.Errorf("advice %+v: the report that follows it is refused: %v", *a, ferr)
	}
	if _, _, ferr := Ingest(&s, nr, at(30), c.alloc); ferr != nil {
		return a, fmt.Errorf("advice %+v: the report that follows it is refused by the state: %v", *a, ferr)
	}
	b := r.Batch
	init := float64(b.Init)
	switch {
	case a.Workers != c.alloc.Workers:
		return a, fmt.Errorf("advice %+v is not for the allocation's %d workers", *a, c.alloc.Workers)
	case int64(a.Size) > max(b.Max, int64(a.Workers)):
		return a, fmt.Errorf("advice %+v exceeds maxBatchSize %d", *a, b.Max)
	case b.MaxLocal > 0 && int64(a.LocalSize) > b.MaxLocal:
		return a, fmt.Errorf("advice %+v exceeds maxLocalBatchSize %d", *a, b.MaxLocal)
	case !(a.LRScale > 0) || a.LRScale > goodput.MaxGain || math.IsInf(a.LRScale, 0):
		return a, fmt.Errorf("advice %+v: lrScale outside (0, %d]", *a, goodput.MaxGain)
	case a.LRScale > max(float64(a.Size)/init, 1):
		return a, fmt.Errorf("advice %+v: lrScale above the batch's ratio %v to the initial %d", *a, float64(a.Size)/init, b.Init)
	}
	return a, nil
}

// TestAdviceHostileBounds is issue 30's case: the advice for bounds
// within the limits and a huge gradient variance was 249,999,999
// accumulation steps with an lrScale of 2.5e8, and the report that
// followed it was refused. Whether the batch comes from the fitted model
// or the scheduler's estimates (which may have chosen the largest batch),
// a report that runs it is accepted and lrScale is at most MaxGain.
func TestAdviceHostileBounds(t *testing.T) {
	for _, c := range []struct {
		name  string
		alloc Allocation
	}{
		{"fitted model", Allocation{Workers: 4, Nodes: 1, Fit: &truth}},
		{"the scheduler's batch, the largest", Allocation{Workers: 4, Nodes: 1, Batch: 1e9}},
		{"one worker", Allocation{Workers: 1, Nodes: 1, Batch: 1e9}},
		{"workers that do not divide the batch", Allocation{Workers: 3, Nodes: 1, Batch: 1e9}},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, err := checkAdvice(adviceCase{hostileBounds(), c.alloc})
			if err != nil {
				t.Fatal(err)
			}
			if a == nil {
				t.Fatal("no advice")
			}
			if a.AccumulationSteps > MaxAccumulation || a.LRScale > goodput.MaxGain {
				t.Errorf("advice %+v: accumulation above %d or lrScale above %d", *a, int(MaxAccumulation), goodput.MaxGain)
			}
			t.Logf("advice %+v", *a)
		})
	}
}

// logUniform draws an integer in [lo, hi] spread over its orders of
// magnitude, as bounds and statistics are.
func logUniform(rng *rand.Rand, lo, hi float64) float64 {
	return math.Min(math.Max(math.Round(math.Exp(math.Log(lo)+rng.Float64()*(math.Log(hi)-math.Log(lo)))), lo), hi)
}

// randomAdviceCase is a report with random bounds a report may carry and
// random gradient statistics, and a random allocation: a fitted model or
// a batch the scheduler chose (any size), any workers.
func randomAdviceCase(rng *rand.Rand) adviceCase {
	init := int64(logUniform(rng, 1, MaxBatchSize))
	w := Wire{Generation: ptr("g"), Workers: ptr(int64(logUniform(rng, 1, adviceMaxWorkers))), Steps: ptr[int64](0), Epoch: ptr(0.0),
		InitBatchSize: ptr(init), MaxBatchSize: ptr(int64(logUniform(rng, float64(init), MaxBatchSize)))}
	if rng.IntN(3) > 0 {
		w.MaxLocalBatchSize = ptr(int64(logUniform(rng, 1, float64(*w.MaxBatchSize))))
	}
	if rng.IntN(3) == 0 {
		w.MinLocalBatchSize = ptr(int64(logUniform(rng, 1, float64(min(*w.MaxBatchSize, *cmpOr(w.MaxLocalBatchSize, w.MaxBatchSize))))))
	}
	if rng.IntN(4) > 0 {
		stat := func() *float64 {
			if rng.IntN(5) == 0 {
				return ptr(0.0)
			}
			return ptr(logUniform(rng, 1e-30, MaxGradient))
		}
		w.GradSqNorm, w.GradVariance = stat(), stat()
	}
	workers := int(logUniform(rng, 1, adviceMaxWorkers))
	alloc := Allocation{Workers: workers, Nodes: 1 + rng.IntN(workers)}
	if rng.IntN(2) == 0 {
		fit := goodput.Params{AlphaC: logUniform(rng, 1, 1e6) * 1e-6, BetaC: logUniform(rng, 1, 1e6) * 1e-9,
			AlphaR: rng.Float64(), BetaR: rng.Float64() / 10, AlphaN: rng.Float64(), BetaN: rng.Float64() / 10, Gamma: 1 + 9*rng.Float64()}
		alloc.Fit = &fit
	} else {
		alloc.Batch = int(logUniform(rng, 1, 2*MaxBatchSize))
	}
	return adviceCase{w, alloc}
}

// cmpOr is a if not nil, else b.
func cmpOr(a, b *int64) *int64 {
	if a != nil {
		return a
	}
	return b
}

// TestAdviceReportable: for random reports and allocations, a report
// that runs the advice is accepted, within the job's bounds and with
// lrScale bounded (checkAdvice).
func TestAdviceReportable(t *testing.T) {
	rng := rand.New(rand.NewPCG(30, 4))
	advised := 0
	for i := range 3000 {
		c := randomAdviceCase(rng)
		a, err := checkAdvice(c)
		if err != nil {
			t.Fatalf("case %d (report %s, allocation %+v): %v", i, wireString(c.w), c.alloc, err)
		}
		if a != nil {
			advised++
		}
	}
	if advised < 1000 {
		t.Errorf("only %d of 3000 cases were advised: the generator tests too little", advised)
	}
}

// wireString shows a report's batch fields for a failure message.
func wireString(w Wire) string {
	v := func(p *int64) string {
		if p == nil {
			return "-"
		}
		return fmt.Sprint(*p)
	}
	f := func(p *float64) string {
		if p == nil {
			return "-"
		}
		return fmt.Sprint(*p)
	}
	return fmt.Sprintf("workers %d init %s max %s minLocal %s maxLocal %s sqr %s var %s", *w.Workers,
		v(w.InitBatchSize), v(w.MaxBatchSize), v(w.MinLocalBatchSize), v(w.MaxLocalBatchSize), f(w.GradSqNorm), f(w.GradVariance))
}

// FuzzAdviceReportable is TestAdviceReportable's property for any bounds
// and statistics the fuzzer finds (reports the check refuses are
// skipped).
func FuzzAdviceReportable(f *testing.F) {
	f.Add(int64(4), int64(1e9), int64(0), int64(1), 1e-30, 1e30, 4, 4, 0, true)
	f.Add(int64(4), int64(1e9), int64(0), int64(1), 1e-30, 1e30, 4, 3, int(1e9), false)
	f.Add(int64(128), int64(2048), int64(8), int64(64), 1.0, 100.0, 2, 8, 512, false)
	f.Add(int64(1), int64(7), int64(0), int64(0), 0.0, 0.0, 1, 9, 7, false)
	f.Fuzz(func(t *testing.T, init, maxBatch, minLocal, maxLocal int64, sqr, variance float64, workers, allocWorkers, allocBatch int, fit bool) {
		if allocWorkers < 1 || allocWorkers > adviceMaxWorkers {
			return // the scheduler allocates within the server's maximum
		}
		w := Wire{Generation: ptr("g"), Workers: ptr(int64(workers)), Steps: ptr[int64](0), Epoch: ptr(0.0),
			InitBatchSize: ptr(init), MaxBatchSize: ptr(maxBatch), GradSqNorm: ptr(sqr), GradVariance: ptr(variance)}
		if minLocal != 0 {
			w.MinLocalBatchSize = ptr(minLocal)
		}
		if maxLocal != 0 {
			w.MaxLocalBatchSize = ptr(maxLocal)
		}
		alloc := Allocation{Workers: allocWorkers, Nodes: 1, Batch: allocBatch}
		if fit {
			alloc.Fit = &truth
		}
		if _, err := checkAdvice(adviceCase{w, alloc}); err != nil {
			t.Fatalf("report %s, allocation %+v: %v", wireString(w), alloc, err)
		}
	})
}
