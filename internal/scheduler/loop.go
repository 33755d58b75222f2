package scheduler

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"
)

// ErrStopped is returned by Loop.Do once the loop's Run has returned (or
// before it started, after it returned once): nothing runs the call.
var ErrStopped = errors.New("scheduler loop stopped")

// Loop runs a Core on a clock for the live system; it is the one door
// into the core: every read and change goes through Do, on the loop's
// goroutine, so the core needs no lock. Callers never wait on a lock the
// loop holds: calls queue under a short lock and a one-slot channel wakes
// the loop. Cycles run when Core.Due says so.
type Loop struct {
	core  *Core
	clock clock.Clock
	watch clock.PassiveClock
	// BeforeCycle, if set, runs right before every cycle, on the loop's
	// goroutine, with the context Run was given and the cycle's time: the
	// place to hand the core fresh estimates.
	BeforeCycle func(ctx context.Context, now time.Time)
	// OnCycle, if set, receives every cycle's report and error, on the
	// loop's goroutine, with the context Run was given.
	OnCycle func(ctx context.Context, rep CycleReport, err error)
	// Hold, if set, stops the clock at a time until released (a simulated
	// cluster's clock.Scaled.HoldAt): the loop holds it at its next due
	// cycle and, from the cycle's start to the end of OnCycle, at the
	// cycle's time, so that however late the loop runs, its cycles run at
	// their due times and take no time on the clock, as in the simulator.
	Hold func(at time.Time) (release func())

	mu      sync.Mutex
	calls   []*call
	stopped bool
	done    chan struct{} // closed when Run returns
	wake    chan struct{}
	// busySince is the watch's time (unix ns) when the loop started its
	// current cycle or call; 0 while it waits.
	busySince atomic.Int64
}

// call is one Do request. state moves from pending to running (the loop
// took it) or to abandoned (the caller gave up first), never both, so Do
// returns nil exactly when f ran.
type call struct {
	f     func(*Core)
	state atomic.Int32
	done  chan struct{}
}

const (
	callPending int32 = iota
	callRunning
	callAbandoned
)

// NewLoop wraps a core. The loop owns the core from now on: reach it only
// through Do. watch, if not nil, times the loop's work for Busy (the live
// system passes the wall clock, so that a scaled scheduler clock does not
// scale the wedge detection); nil means clk.
func NewLoop(core *Core, clk clock.Clock, watch clock.PassiveClock) *Loop {
	if watch == nil {
		watch = clk
	}
	return &Loop{core: core, clock: clk, watch: watch, wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// Do runs f on the loop's goroutine with exclusive access to the core and
// waits for it. It returns nil if f ran, ctx's error if ctx ended before
// the loop took f (f then never runs), and ErrStopped if the loop is not
// running any more.
func (l *Loop) Do(ctx context.Context, f func(*Core)) error {
	c := &call{f: f, done: make(chan struct{})}
	l.mu.Lock()
	if l.stopped {
		l.mu.Unlock()
		return ErrStopped
	}
	l.calls = append(l.calls, c)
	l.mu.Unlock()
	l.signal()
	var err error
	select {
	case <-c.done:
		return nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-l.done:
		err = ErrStopped
	}
	if c.state.CompareAndSwap(callPending, callAbandoned) {
		return err
	}
	// The loop took f before we gave up: it finishes it (Run runs every
	// call it took before returning).
	<-c.done
	return nil
}

func (l *Loop) signal() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// Busy returns how long the loop has been in its current cycle or call,
// by the watch; zero while it waits for work.
func (l *Loop) Busy() time.Duration {
	since := l.busySince.Load()
	if since == 0 {
		return 0
	}
	return l.watch.Since(time.Unix(0, since))
}

func (l *Loop) setBusy(busy bool) {
	if busy {
		l.busySince.Store(l.watch.Now().UnixNano())
	} else {
		l.busySince.Store(0)
	}
}

// Run runs calls and cycles until ctx ends, then returns ctx's error. It
// checks ctx after every cycle and call, so a cycle that keeps failing
// cannot hold it; the core's retry backoff keeps such cycles apart. Run
// may be called once.
func (l *Loop) Run(ctx context.Context) error {
	var timer clock.Timer
	// due lets go of the hold at the next due cycle.
	due := func() {}
	defer func() {
		due()
		if timer != nil {
			timer.Stop()
		}
		l.stop()
	}()
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		l.mu.Lock()
		calls := l.calls
		l.calls = nil
		l.mu.Unlock()
		for _, c := range calls {
			if !c.state.CompareAndSwap(callPending, callRunning) {
				continue // its caller gave up
			}
			l.setBusy(true)
			c.f(l.core)
			l.setBusy(false)
			close(c.done)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		now := l.clock.Now()
		var timerC <-chan time.Time
		at, ok := l.core.Due()
		prev := due
		due = func() {}
		if ok && l.Hold != nil {
			due = l.Hold(at)
			now = l.clock.Now() // no later than at
		}
		prev()
		if ok {
			wait := at.Sub(now)
			if wait <= 0 {
				l.setBusy(true)
				release := func() {}
				if l.Hold != nil {
					release = l.Hold(now)
				}
				if l.BeforeCycle != nil {
					l.BeforeCycle(ctx, now)
				}
				rep, err := l.core.Cycle(ctx, now)
				if l.OnCycle != nil {
					l.OnCycle(ctx, rep, err)
				}
				release()
				l.setBusy(false)
				continue
			}
			if timer == nil {
				timer = l.clock.NewTimer(wait)
			} else {
				timer.Reset(wait)
			}
			timerC = timer.C()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-l.wake:
		case <-timerC:
		}
	}
}

// stop refuses new calls and releases the callers of queued ones.
func (l *Loop) stop() {
	l.mu.Lock()
	l.stopped = true
	l.calls = nil
	l.mu.Unlock()
	close(l.done)
}
