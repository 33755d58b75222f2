package scheduler

import (
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/vodascheduler/voda/internal/model"
)

// EventKind names what happened.
type EventKind int

// Event kinds.
const (
	JobArrived EventKind = iota
	JobCompleted
	JobFailed
	JobDeleted
	PriorityChanged
	NodeAdded
	NodeRemoved
	EstimatesUpdated
)

// Event is something the scheduler must learn of.
type Event struct {
	Kind     EventKind
	Spec     model.JobSpec   // JobArrived
	Job      string          // job events
	Priority int             // PriorityChanged
	Node     model.Node      // NodeAdded; NodeRemoved uses Node.Name
	Est      model.Estimates // EstimatesUpdated
}

// Apply feeds the event to the core at now.
func (c *Core) Apply(now time.Time, ev Event) error {
	switch ev.Kind {
	case JobArrived:
		return c.Submit(now, ev.Spec)
	case JobCompleted:
		_, err := c.Finish(now, ev.Job, model.StatusCompleted)
		return err
	case JobFailed:
		_, err := c.Finish(now, ev.Job, model.StatusFailed)
		return err
	case JobDeleted:
		_, err := c.Finish(now, ev.Job, model.StatusCanceled)
		return err
	case PriorityChanged:
		return c.SetPriority(now, ev.Job, ev.Priority)
	case NodeAdded:
		return c.AddNode(now, ev.Node)
	case NodeRemoved:
		return c.RemoveNode(now, ev.Node.Name)
	case EstimatesUpdated:
		return c.SetEstimates(ev.Job, ev.Est)
	}
	return nil
}

// Loop runs a Core on a clock for the live system. Senders never block:
// events go to an unbounded queue under a short lock, and a one-slot
// channel wakes the loop. Cycles run when Core.Due says so.
type Loop struct {
	core  *Core
	clock clock.Clock
	// OnCycle, if set, receives every cycle's report and error.
	OnCycle func(CycleReport, error)
	// OnEventError, if set, receives events the core rejected.
	OnEventError func(Event, error)

	mu      sync.Mutex
	pending []Event
	calls   []func(*Core)
	wake    chan struct{}
}

// NewLoop wraps a core. The loop owns the core from now on: reach it only
// through Notify and Do.
func NewLoop(core *Core, clk clock.Clock) *Loop {
	return &Loop{core: core, clock: clk, wake: make(chan struct{}, 1)}
}

// Notify queues an event; it never blocks and never drops.
func (l *Loop) Notify(ev Event) {
	l.mu.Lock()
	l.pending = append(l.pending, ev)
	l.mu.Unlock()
	l.signal()
}

// Do runs f on the loop's goroutine with exclusive access to the core and
// waits for it, or for ctx.
func (l *Loop) Do(ctx context.Context, f func(*Core)) error {
	done := make(chan struct{})
	l.mu.Lock()
	l.calls = append(l.calls, func(c *Core) { f(c); close(done) })
	l.mu.Unlock()
	l.signal()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (l *Loop) signal() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// Run processes events and cycles until ctx ends.
func (l *Loop) Run(ctx context.Context) error {
	var timer clock.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		// Drain everything queued so far, then decide what is due.
		l.mu.Lock()
		events, calls := l.pending, l.calls
		l.pending, l.calls = nil, nil
		l.mu.Unlock()
		now := l.clock.Now()
		for _, ev := range events {
			if err := l.core.Apply(now, ev); err != nil && l.OnEventError != nil {
				l.OnEventError(ev, err)
			}
		}
		for _, f := range calls {
			f(l.core)
		}
		var timerC <-chan time.Time
		if at, ok := l.core.Due(); ok {
			if wait := at.Sub(now); wait <= 0 {
				rep, err := l.core.Cycle(ctx, now)
				if l.OnCycle != nil {
					l.OnCycle(rep, err)
				}
				continue
			} else {
				if timer == nil {
					timer = l.clock.NewTimer(wait)
				} else {
					timer.Reset(wait)
				}
				timerC = timer.C()
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-l.wake:
		case <-timerC:
		}
	}
}
