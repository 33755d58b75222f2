package api

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/vodascheduler/voda/internal/collector"
	"github.com/vodascheduler/voda/internal/jobspec"
	"github.com/vodascheduler/voda/internal/progress"
	"github.com/vodascheduler/voda/internal/store"
)

// maxReportBytes bounds a progress report's body: a report is a few
// hundred bytes; 64 KiB leaves room for metrics without letting a job
// make the server read megabytes a minute.
const maxReportBytes = 64 << 10

// reportProgress takes a progress report from a job's pods
// (docs/progress.md): checked, authorized for that job, applied to its
// stored state; the answer is what the scheduler wants the job to know.
func (s *Server) reportProgress(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength > maxReportBytes {
		s.fail(w, http.StatusRequestEntityTooLarge, "RequestEntityTooLarge", "body",
			fmt.Sprintf("body: %d bytes; a progress report is at most %d", r.ContentLength, maxReportBytes))
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxReportBytes)
	var wire progress.Wire
	if !s.decodeJSON(w, r, &wire) {
		return
	}
	report, ferr := wire.Check(cmpMaxWorkers(s.cfg.MaxWorkers))
	if ferr != nil {
		s.fail(w, http.StatusBadRequest, "Invalid", ferr.Field, ferr.Error())
		return
	}
	name := r.PathValue("name")
	j, ok := s.lookup(w, r, name)
	if !ok {
		return
	}
	reply, err := s.reports.IngestRead(r.Context(), name, report, &j)
	var fe *progress.FieldError
	switch {
	case errors.As(err, &fe):
		s.fail(w, http.StatusBadRequest, "Invalid", fe.Field, fe.Error())
	case errors.Is(err, store.ErrNotFound):
		s.fail(w, http.StatusNotFound, "NotFound", "name", fmt.Sprintf("name: no job %q", name))
	case errors.Is(err, progress.ErrFinished):
		s.fail(w, http.StatusConflict, "Conflict", "name", fmt.Sprintf("name: job %s has finished; it takes no more reports", name))
	case err != nil:
		s.failInternal(w, r, err)
	default:
		outcome := "used"
		if !reply.Used {
			outcome = reply.Reason
		}
		s.cfg.Metrics.ProgressReports.WithLabelValues(j.Spec.GPUType, outcome).Inc()
		writeJSON(w, http.StatusOK, reply)
	}
}

// cmpMaxWorkers is the server's limit of workers, with its default.
func cmpMaxWorkers(n int) int {
	if n <= 0 {
		return jobspec.DefaultMaxWorkers
	}
	return n
}

// measured fills what a job's progress reports say into its view, and its
// estimated finish on its current workers: the remaining time on one GPU
// over the speedup at that count, give or take the spread of its measured
// throughput, after what is left of a restart under way.
func (s *Server) measured(out *Job, j store.Job, now time.Time) {
	st, err := progress.Decode(j.Progress)
	if err != nil || st == nil {
		return
	}
	m := &Measured{
		Generation: st.Latest.Generation, LastReport: st.At, Epoch: st.Latest.Epoch, TotalEpochs: st.Latest.TotalEpochs,
		Steps: st.Latest.Steps, Samples: st.Latest.Samples, Metrics: st.Latest.Metrics,
	}
	if n := st.Measured.Restarts; n > 0 {
		m.RestartSeconds = st.Measured.RestartSeconds / float64(n)
	}
	c := collector.New()
	c.SetJob(j.Name, "", st.Measured)
	d := c.Detail(j.Name, "")
	for _, p := range d.Placements {
		m.Throughput = append(m.Throughput, Throughput{Workers: p.Workers, Nodes: p.Nodes, EpochsPerHour: p.Rate * 3600,
			RelativeError: p.RateRelErr, Seconds: p.Seconds})
	}
	out.Measured = m
	k := out.Workers
	if out.RemainingSeconds == nil || k <= 0 || k >= len(out.Speedup) || out.Speedup[k] <= 0 {
		return
	}
	left := *out.RemainingSeconds / out.Speedup[k]
	finish := now.Add(time.Duration(left*float64(time.Second)) + j.Status.Est.PendingRestart(j.Status.State.LastChange, now))
	out.EstimatedFinish = &finish
	out.EstimatedFinishErrorSeconds = left * d.RemainingRelErr
}
