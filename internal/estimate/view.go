package estimate

import (
	"time"

	"github.com/vodascheduler/voda/internal/model"
)

// Left is the time a job needs to finish on k workers, in seconds, by its
// estimates: its remaining time on one GPU over the speedup on k. ok is
// false when they do not say (no remaining time, k outside the curve, or
// no speed there). What is left of a restart under way comes on top
// (model.Estimates.PendingRestart).
func Left(e model.Estimates, k int) (float64, bool) {
	if k <= 0 || k >= len(e.Speedup) || e.RemainingSeconds < 0 || !(e.Speedup[k] > 0) {
		return 0, false
	}
	return e.RemainingSeconds / e.Speedup[k], true
}

// Finish is when a job on k workers finishes by its estimates, now that
// its workers last changed at lastChange: Left, after what is left of a
// restart under way. ok is false when Left is unknown.
func Finish(e model.Estimates, k int, lastChange, now time.Time) (at time.Time, left float64, ok bool) {
	left, ok = Left(e, k)
	if !ok {
		return time.Time{}, 0, false
	}
	return now.Add(time.Duration(left*float64(time.Second)) + e.PendingRestart(lastChange, now)), left, true
}
