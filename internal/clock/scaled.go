package clock

import (
	"time"

	"k8s.io/utils/clock"
)

// Scaled is a k8s.io/utils/clock.Clock on which time runs Speed times as
// fast as on the wall clock, starting from Origin. Timers wait the
// scaled-down wall time, so a scheduler's 30 s rate limit takes 0.3 s at
// speed 100.
type Scaled struct {
	real   clock.Clock
	origin time.Time
	start  time.Time
	speed  float64
}

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
	return c.origin.Add(time.Duration(float64(c.real.Since(c.start)) * c.speed))
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
