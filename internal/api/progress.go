package api

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/vodascheduler/voda/internal/collector"
	"github.com/vodascheduler/voda/internal/estimate"
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
func (s *Server) reportProgress(w http.ResponseWriter, r *http.Request) error {
	if r.ContentLength > maxReportBytes {
		return newError(http.StatusRequestEntityTooLarge, ReasonRequestEntityTooLarge, "body",
			fmt.Sprintf("body: %d bytes; a progress report is at most %d", r.ContentLength, maxReportBytes))
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxReportBytes)
	var wire progress.Wire
	if err := decodeJSON(w, r, &wire); err != nil {
		return err
	}
	report, ferr := wire.Check(cmpMaxWorkers(s.cfg.MaxWorkers))
	if ferr != nil {
		return invalid(ferr.Field, ferr.Error())
	}
	name := r.PathValue("name")
	j, err := s.lookup(r, name)
	if err != nil {
		return err
	}
	reply, err := s.reports.IngestRead(r.Context(), name, report, &j)
	var fe *progress.FieldError
	switch {
	case errors.As(err, &fe):
		return invalid(fe.Field, fe.Error())
	case errors.Is(err, store.ErrNotFound):
		return noJob(name)
	case errors.Is(err, progress.ErrFinished):
		return conflict(fmt.Sprintf("name: job %s has finished; it takes no more reports", name))
	case errors.Is(err, progress.ErrBusy):
		s.busy.note(name, err)
		return newError(http.StatusTooManyRequests, ReasonTooManyRequests, "name",
			fmt.Sprintf("name: job %s has other reports being applied; nothing was kept, retry after %d s", name, busyRetrySeconds)).
			with("Retry-After", strconv.Itoa(busyRetrySeconds))
	case err != nil:
		return err
	}
	outcome := "used"
	if !reply.Used {
		outcome = reply.Reason
	}
	s.cfg.Metrics.ProgressReports.WithLabelValues(j.Spec.GPUType, outcome).Inc()
	writeJSON(w, http.StatusOK, reply)
	return nil
}

// busyRetrySeconds is the Retry-After of a report refused as busy: a
// report takes milliseconds, so a second clears a job's queue, and a job
// reports every 30 s anyway.
const busyRetrySeconds = 1

// busyLogEvery is the most often the server logs reports refused as busy.
const busyLogEvery = time.Minute

// busyLog logs the reports refused as busy (progress.ErrBusy) without a
// line each: the first at once, then at most one line per every saying how
// many were refused since the last line (a timer writes it, so the end of
// a burst is told too). Two reporters for one job, or a flood, are the
// senders' doing and expected; a line per request would let them fill the
// log. voda_http_requests_total counts each 429.
type busyLog struct {
	log   *slog.Logger
	every time.Duration

	mu sync.Mutex
	// quietUntil is when the next line may be written at once; held the
	// refusals since the last line, job and err the latest.
	quietUntil time.Time
	held       int
	job        string
	err        error
	flushing   bool
}

// note records a report of job refused with err.
func (b *busyLog) note(job string, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	if now.After(b.quietUntil) {
		b.quietUntil = now.Add(b.every)
		b.log.Warn("progress report refused as busy (429); more are summed up in one line a period",
			"job", job, "err", err, "period", b.every)
		return
	}
	b.held, b.job, b.err = b.held+1, job, err
	if !b.flushing {
		b.flushing = true
		time.AfterFunc(b.quietUntil.Sub(now), b.flush)
	}
}

// flush logs the refusals held since the last line.
func (b *busyLog) flush() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.flushing = false
	if b.held == 0 {
		return
	}
	b.log.Warn("progress reports refused as busy (429) since the last line", "refused", b.held,
		"period", b.every, "lastJob", b.job, "lastErr", b.err)
	b.held, b.quietUntil = 0, time.Now().Add(b.every)
}

// cmpMaxWorkers is the server's limit of workers, with its default.
func cmpMaxWorkers(n int) int {
	if n <= 0 {
		return jobspec.DefaultMaxWorkers
	}
	return n
}

// measured fills what a job's progress reports say into its view, and its
// estimated finish on its current workers by the scheduler's estimates
// (estimate.Finish), give or take the spread of its measured throughput.
// Nothing is fitted here: the view shows the job's own measurements.
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
	for _, p := range collector.Placements(st.Measured) {
		m.Throughput = append(m.Throughput, Throughput{Workers: p.Workers, Nodes: p.Nodes, Pods: p.Pods, EpochsPerHour: p.Rate * 3600,
			RelativeError: p.RateRelErr, Seconds: p.Seconds})
	}
	out.Measured = m
	if out.RemainingSeconds == nil {
		return
	}
	// The speedup curve is indexed by GPUs (model.Estimates), not workers.
	finish, left, ok := estimate.Finish(j.Status.Est, out.GPUs, j.Status.State.LastChange, now)
	if !ok {
		return
	}
	out.EstimatedFinish = &finish
	out.EstimatedFinishErrorSeconds = left * collector.RemainingRelErr(st.Measured)
}
