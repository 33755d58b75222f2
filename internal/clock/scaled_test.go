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
