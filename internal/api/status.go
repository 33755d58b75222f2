package api

import "github.com/vodascheduler/voda/internal/model"

// Status is a job's status on the wire (Job.Status, the status filter of
// GET /api/v1/jobs). It has model.Status's values, so that statusOf is a
// conversion; the CLI and the Go client compare against these constants,
// and internal/ui's tests check that the dashboard spells the same
// (TestStatusesMatchAPI).
type Status string

// The statuses a job goes through.
const (
	StatusSubmitted = Status(model.StatusSubmitted)
	StatusWaiting   = Status(model.StatusWaiting)
	StatusRunning   = Status(model.StatusRunning)
	StatusCompleted = Status(model.StatusCompleted)
	StatusFailed    = Status(model.StatusFailed)
	StatusCanceled  = Status(model.StatusCanceled)
)

// Statuses are every Status, in the order a job goes through them.
var Statuses = []Status{StatusSubmitted, StatusWaiting, StatusRunning, StatusCompleted, StatusFailed, StatusCanceled}

// Done reports whether s is final: Completed, Failed or Canceled.
func (s Status) Done() bool { return model.Status(s).Done() }

// Valid reports whether s is one of Statuses.
func (s Status) Valid() bool {
	for _, st := range Statuses {
		if s == st {
			return true
		}
	}
	return false
}
