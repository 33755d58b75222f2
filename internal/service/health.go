package service

import (
	"fmt"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"

	"github.com/vodascheduler/voda/internal/metrics"
)

// wedgeAfter is how long one cycle or call may keep the scheduler loop
// busy before readiness reports the scheduler wedged. Cycles take
// milliseconds; applying a burst of actions to Kubernetes takes seconds.
const wedgeAfter = 2 * time.Minute

// health is what Service.Health reports on. Any goroutine.
type health struct {
	gpuType string
	metrics *metrics.Metrics
	wall    clock.Clock
	// ready: the service has recovered its state and is consuming
	// notifications (Health's first condition).
	ready atomic.Bool
	// storeErr is the last failed store write (nil after a success).
	storeErr atomic.Pointer[storeFailure]
}

type storeFailure struct {
	since time.Time
	err   error
}

// err is nil while the scheduler works: it has recovered its jobs, its
// loop is not busy in one cycle or call for longer than wedgeAfter, and
// the last store write succeeded. Otherwise it says what is wrong. busy
// is called only once ready (the loop exists then).
func (h *health) err(busy func() time.Duration) error {
	gt := h.gpuType
	if !h.ready.Load() {
		return fmt.Errorf("scheduler %s: not running (recovering its jobs from the store, or stopped)", gt)
	}
	if busy := busy(); busy > wedgeAfter {
		return fmt.Errorf("scheduler %s: busy for %s in one cycle or call (more than %s): it may be wedged",
			gt, busy.Round(time.Second), wedgeAfter)
	}
	if f := h.storeErr.Load(); f != nil {
		return fmt.Errorf("scheduler %s: store writes failing since %s: %v", gt, f.since.UTC().Format(time.RFC3339), f.err)
	}
	return nil
}

// storeWrote records the outcome of a store write.
func (h *health) storeWrote(err error) {
	if err == nil {
		h.storeErr.Store(nil)
		return
	}
	h.metrics.StoreWriteErrors.WithLabelValues(h.gpuType).Inc()
	if h.storeErr.Load() == nil {
		h.storeErr.Store(&storeFailure{since: h.wall.Now(), err: err})
	}
}
