package estimate

import (
	"cmp"

	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/progress"
)

// FromReports is what a job's stored progress reports (st) tell the
// estimator: its measurements and what it declared, for SetJob, and the
// job to estimate, for Estimate. The work left is the epochs left (the
// reports' total, else the spec's); a job that declared an adaptive batch
// also gets its bounds, its gradient statistics and the steps of its
// initial batch left (epochs left times the samples of an epoch, as its
// reports' samples and epochs say, over the initial batch). A job that
// ignores the batch sizes advised is estimated at the batch it runs. gpus
// caps the curve (the cluster's GPUs). ok is false when the reports do
// not say how many epochs are left: the job is not estimated.
func FromReports(st *progress.State, spec model.JobSpec, app string, gpus int) (Job, Measured, bool) {
	if st == nil {
		return Job{}, Measured{}, false
	}
	m := Measured{Throughput: st.Measured}
	b, l := st.Latest.Batch, st.Latest
	adaptive := b.Adaptive() && st.Goodput != nil
	if adaptive {
		m.Steps = st.Goodput.Configs
		bounds := b.Bounds()
		m.Declared = Declared{InitBatch: bounds.InitBatch, MaxBatch: bounds.MaxBatch, MinLocal: bounds.MinLocal, MaxLocal: bounds.MaxLocal}
		if l.Samples > 0 && l.Epoch > 0 {
			m.Declared.SamplesPerEpoch = float64(l.Samples) / l.Epoch
		}
	}
	rem, ok := st.RemainingEpochs(spec.Epochs)
	if !ok {
		return Job{}, m, false
	}
	j := Job{Name: spec.Name, App: app, MaxWorkers: min(spec.MaxWorkers*spec.PerWorker(), gpus), Workers: st.Latest.Workers, Remaining: rem, RemainingSteps: -1}
	if !adaptive {
		return j, m, true
	}
	j.Bounds, j.Grad = m.Declared.Bounds(), st.Goodput.Stats()
	if st.Ignores() {
		j.Bounds.Fixed = int(cmp.Or(l.GlobalBatchSize, b.Init))
	}
	if s := m.Declared.SamplesPerEpoch; s > 0 {
		j.RemainingSteps = rem * s / float64(b.Init)
	}
	return j, m, true
}
