package clock

import (
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

var t0 = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func TestScaledRunsFaster(t *testing.T) {
	real := testingclock.NewFakeClock(t0)
	c := NewScaled(real, t0.Add(time.Hour), 60)
	real.Step(time.Second)
	if got, want := c.Now(), t0.Add(time.Hour+time.Minute); !got.Equal(want) {
		t.Fatalf("Now = %v, want %v", got, want)
	}
	tm := c.NewTimer(time.Minute) // one wall second
	real.Step(999 * time.Millisecond)
	select {
	case <-tm.C():
		t.Fatal("timer fired early")
	default:
	}
	real.Step(time.Millisecond)
	select {
	case <-tm.C():
	case <-time.After(time.Second):
		t.Fatal("timer did not fire after one wall second")
	}
	if NewScaled(real, t0, 0).Speed() != 1 {
		t.Fatal("speed 0 not taken as 1")
	}
}

// A held clock stands still, however long the hold and however many
// holders, and runs on from where it stopped once the last lets go.
func TestScaledHold(t *testing.T) {
	real := testingclock.NewFakeClock(t0)
	c := NewScaled(real, t0, 100)
	real.Step(time.Second) // 100 s
	first := c.Hold()
	real.Step(time.Second)
	second := c.Hold()
	real.Step(time.Second)
	first()
	first() // only the first call counts
	real.Step(time.Second)
	if got, want := c.Now(), t0.Add(100*time.Second); !got.Equal(want) {
		t.Fatalf("held: Now = %v, want %v", got, want)
	}
	second()
	if got, want := c.Now(), t0.Add(100*time.Second); !got.Equal(want) {
		t.Fatalf("just released: Now = %v, want %v", got, want)
	}
	real.Step(time.Second)
	if got, want := c.Now(), t0.Add(200*time.Second); !got.Equal(want) {
		t.Fatalf("released: Now = %v, want %v", got, want)
	}
}

// A hold ahead lets the clock run up to it and stops it there; released,
// the clock runs on from there, and a hold released before the clock
// reached it changes nothing.
func TestScaledHoldAt(t *testing.T) {
	real := testingclock.NewFakeClock(t0)
	c := NewScaled(real, t0, 100)
	unreached := c.HoldAt(t0.Add(500 * time.Second))
	at := c.HoldAt(t0.Add(150 * time.Second))
	real.Step(time.Second)
	if got, want := c.Now(), t0.Add(100*time.Second); !got.Equal(want) {
		t.Fatalf("before the hold: Now = %v, want %v", got, want)
	}
	real.Step(3 * time.Second) // 400 s if nothing held
	if got, want := c.Now(), t0.Add(150*time.Second); !got.Equal(want) {
		t.Fatalf("at the hold: Now = %v, want %v", got, want)
	}
	at()
	real.Step(time.Second)
	if got, want := c.Now(), t0.Add(250*time.Second); !got.Equal(want) {
		t.Fatalf("released: Now = %v, want %v", got, want)
	}
	unreached()
	real.Step(time.Second)
	if got, want := c.Now(), t0.Add(350*time.Second); !got.Equal(want) {
		t.Fatalf("after a hold released unreached: Now = %v, want %v", got, want)
	}
	past := c.HoldAt(t0) // already past: stops now
	real.Step(time.Second)
	if got, want := c.Now(), t0.Add(350*time.Second); !got.Equal(want) {
		t.Fatalf("held from a past time: Now = %v, want %v", got, want)
	}
	past()
}
