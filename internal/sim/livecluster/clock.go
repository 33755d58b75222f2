package livecluster

import (
	"time"

	"k8s.io/utils/clock"
)

// ScaledClock is a clock.Clock on which time runs Speed times as fast as
// on the wall clock, starting from Origin. Timers wait the scaled-down
// wall time, so a scheduler's 30 s rate limit takes 0.3 s at speed 100.
type ScaledClock struct {
	real   clock.Clock
	origin time.Time
	start  time.Time
	speed  float64
}

var _ clock.Clock = (*ScaledClock)(nil)

// NewScaledClock returns a clock that reads origin now and runs speed
// times as fast as real. A speed below or at zero is taken as 1.
func NewScaledClock(real clock.Clock, origin time.Time, speed float64) *ScaledClock {
	if !(speed > 0) {
		speed = 1
	}
	return &ScaledClock{real: real, origin: origin, start: real.Now(), speed: speed}
}

// Speed returns how many times faster than the wall clock time runs.
func (c *ScaledClock) Speed() float64 { return c.speed }

// Now returns the scaled time.
func (c *ScaledClock) Now() time.Time {
	return c.origin.Add(time.Duration(float64(c.real.Since(c.start)) * c.speed))
}

// Since returns the scaled time elapsed since t.
func (c *ScaledClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// wall converts a scaled duration to wall time.
func (c *ScaledClock) wall(d time.Duration) time.Duration {
	return time.Duration(float64(d) / c.speed)
}

// After waits d of scaled time.
func (c *ScaledClock) After(d time.Duration) <-chan time.Time { return c.real.After(c.wall(d)) }

// NewTimer returns a timer that fires after d of scaled time.
func (c *ScaledClock) NewTimer(d time.Duration) clock.Timer {
	return &scaledTimer{Timer: c.real.NewTimer(c.wall(d)), c: c}
}

// Sleep sleeps d of scaled time.
func (c *ScaledClock) Sleep(d time.Duration) { c.real.Sleep(c.wall(d)) }

// Tick ticks every d of scaled time.
func (c *ScaledClock) Tick(d time.Duration) <-chan time.Time { return c.real.Tick(c.wall(d)) }

type scaledTimer struct {
	clock.Timer
	c *ScaledClock
}

func (t *scaledTimer) Reset(d time.Duration) bool { return t.Timer.Reset(t.c.wall(d)) }
