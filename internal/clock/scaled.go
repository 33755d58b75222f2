package clock

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Scaled is a k8s.io/utils/clock.Clock on which time runs Speed times as
// fast as on the wall clock, starting from Origin. Timers wait the
// scaled-down wall time, so a scheduler's 30 s rate limit takes 0.3 s at
// speed 100.
//
// A hold stops the clock at a time until it is released, so that what
// the server does in wall time is not multiplied by Speed into its jobs'
// times: a 50 ms decision would be 5 s of every waiting job's time at
// speed 100, and a goroutine woken 100 ms late on a busy machine 10 s.
// A simulated cluster's scheduler holds the clock while it decides
// (Hold) and at its next due cycle (HoldAt); the cluster holds it at its
// next job's end, so the freed GPUs are given out at that instant, as in
// the simulator. Time then runs only while nobody is late. A timer runs
// on the wall clock: one armed before a hold may fire before its scaled
// time, so its user reads Now again, as every one in Voda does.
type Scaled struct {
	real   clock.Clock
	origin time.Time
	start  time.Time
	speed  float64

	mu sync.Mutex
	// holds are the holds not yet released, each a scaled time at which
	// the clock stops.
	holds []*hold
	// paused is the wall time the clock stood still at holds released.
	paused time.Duration
	// last is the latest time Now returned: the clock never goes back.
	last time.Time
}

type hold struct{ at time.Time }

var _ clock.Clock = (*Scaled)(nil)

// NewScaled returns a clock that reads origin now and runs speed times
// as fast as real. A speed below or at zero is taken as 1.
func NewScaled(real clock.Clock, origin time.Time, speed float64) *Scaled {
	if !(speed > 0) {
		speed = 1
	}
	return &Scaled{real: real, origin: origin, start: real.Now(), speed: speed}
}

// Speed returns how many times faster than the wall clock time runs.
func (c *Scaled) Speed() float64 { return c.speed }

// Now returns the scaled time.
func (c *Scaled) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nowLocked()
}

func (c *Scaled) nowLocked() time.Time {
	now := c.free(c.real.Now())
	if h := c.first(); h != nil && now.After(h.at) {
		now = h.at
	}
	if now.Before(c.last) {
		now = c.last
	}
	c.last = now
	return now
}

// free is the scaled time at wall time wall if no hold stood now.
func (c *Scaled) free(wall time.Time) time.Time {
	return c.origin.Add(time.Duration(float64(wall.Sub(c.start)-c.paused) * c.speed))
}

// first returns the earliest hold, or nil.
func (c *Scaled) first() *hold {
	var f *hold
	for _, h := range c.holds {
		if f == nil || h.at.Before(f.at) {
			f = h
		}
	}
	return f
}

// Hold stops the clock now until released.
func (c *Scaled) Hold() (release func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.holdLocked(c.nowLocked())
}

// HoldAt lets the clock run until at, where it stops until released; an
// at already past stops it now. release may be called more than once;
// only its first call counts.
func (c *Scaled) HoldAt(at time.Time) (release func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if now := c.nowLocked(); at.Before(now) {
		at = now
	}
	return c.holdLocked(at)
}

func (c *Scaled) holdLocked(at time.Time) func() {
	h := &hold{at: at}
	c.holds = append(c.holds, h)
	var once sync.Once
	return func() { once.Do(func() { c.release(h) }) }
}

// release drops h. If the clock stood at h (the earliest hold, reached),
// the wall time it stood there is paused time, and it runs on from h.
func (c *Scaled) release(h *hold) {
	c.mu.Lock()
	defer c.mu.Unlock()
	wall := c.real.Now()
	if c.first() == h && !c.free(wall).Before(h.at) {
		// The wall time at which the clock reached h.
		reached := c.start.Add(c.paused + time.Duration(float64(h.at.Sub(c.origin))/c.speed))
		c.paused += wall.Sub(reached)
	}
	for i, x := range c.holds {
		if x == h {
			c.holds = append(c.holds[:i], c.holds[i+1:]...)
			break
		}
	}
}

// Since returns the scaled time elapsed since t.
func (c *Scaled) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// wall converts a scaled duration to wall time.
func (c *Scaled) wall(d time.Duration) time.Duration {
	return time.Duration(float64(d) / c.speed)
}

// After waits d of scaled time.
func (c *Scaled) After(d time.Duration) <-chan time.Time { return c.real.After(c.wall(d)) }

// NewTimer returns a timer that fires after d of scaled time.
func (c *Scaled) NewTimer(d time.Duration) clock.Timer {
	return &scaledTimer{Timer: c.real.NewTimer(c.wall(d)), c: c}
}

// Sleep sleeps d of scaled time.
func (c *Scaled) Sleep(d time.Duration) { c.real.Sleep(c.wall(d)) }

// Tick ticks every d of scaled time.
func (c *Scaled) Tick(d time.Duration) <-chan time.Time { return c.real.Tick(c.wall(d)) }

type scaledTimer struct {
	clock.Timer
	c *Scaled
}

func (t *scaledTimer) Reset(d time.Duration) bool { return t.Timer.Reset(t.c.wall(d)) }
