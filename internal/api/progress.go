package api

import (
	"errors"
	"fmt"
	"net/http"

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
	reply, err := s.reports.Ingest(r.Context(), name, report)
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
