package service

import (
	"github.com/vodascheduler/voda/internal/goodput"
	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/progress"
)

// goodputEstimates are the estimates of a job whose batch size Voda
// chooses (docs/progress.md, "The batch size"): for a job that declared
// an adaptive batch, has a fitted throughput model and follows the
// advice, the speedup on k GPUs is that of the best batch on k (packed
// gpusPerNode to a node) over the best batch on one, with the batch for
// each k, up to maxWorkers. Its remaining time on one GPU is the work
// left, counted in steps of its initial batch (epochs left times the
// samples of an epoch, as its reports' samples and epochs say, over the
// initial batch), over the goodput of the best batch on one GPU; without
// samples the collector's (fixed) remaining time stays. ok is false for
// any other job: the collector's estimates (fixed, its fixed batch)
// stand.
func goodputEstimates(st *progress.State, fixed model.Estimates, remainingEpochs float64, gpusPerNode, maxWorkers int) (model.Estimates, bool) {
	if st == nil || st.Goodput == nil {
		return fixed, false
	}
	g, b := st.Goodput, st.Latest.Batch
	if !b.Adaptive() || g.Params == nil || !g.Follows {
		return fixed, false
	}
	speedup, batch, rate1 := goodput.Curve(*g.Params, g.Stats(), b.Bounds(), gpusPerNode, maxWorkers)
	if speedup == nil {
		return fixed, false
	}
	e := fixed
	e.Speedup, e.Batch = speedup, batch
	if l := st.Latest; l.Samples > 0 && l.Epoch > 0 && remainingEpochs >= 0 {
		steps := remainingEpochs * float64(l.Samples) / l.Epoch / float64(b.Init)
		e.RemainingSeconds = steps / rate1
	}
	return e, true
}
