package report

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock advances only when told.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }
func newFakeClock() *fakeClock               { return &fakeClock{t: time.Unix(1000, 0)} }
func (c *fakeClock) progress(w *bytes.Buffer, tty bool) *Progress {
	return newProgress(w, "sim", 200, tty, c.now)
}

func TestProgressNotTerminal(t *testing.T) {
	var buf bytes.Buffer
	clk := newFakeClock()
	p := clk.progress(&buf, false)
	for done := 0.0; done <= 200; done += 0.5 {
		clk.advance(100 * time.Millisecond)
		p.Set(done)
	}
	clk.advance(time.Second)
	p.Finish()
	p.Set(10) // after Finish: ignored
	p.Finish()
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 10 {
		t.Fatalf("got %d lines, want 9 tenths and the final one:\n%s", len(lines), buf.String())
	}
	if want := "sim:  10%  elapsed 4s  ETA 37s"; lines[0] != want {
		t.Errorf("first line %q, want %q", lines[0], want)
	}
	if want := "sim: 100%  done in 41s"; lines[9] != want {
		t.Errorf("last line %q, want %q", lines[9], want)
	}
	if strings.Contains(buf.String(), "\r") {
		t.Error("carriage return in non-terminal output")
	}
}

func TestProgressJumps(t *testing.T) {
	var buf bytes.Buffer
	clk := newFakeClock()
	p := clk.progress(&buf, false)
	p.Set(5) // 2 %: nothing
	clk.advance(2 * time.Second)
	p.Set(75) // 37 %: one line for 30 %
	clk.advance(2 * time.Second)
	p.Set(76)  // still 30s: nothing
	p.Set(300) // past the total: clamped, and 100 % waits for Finish
	p.Finish()
	want := "sim:  30%  elapsed 2s  ETA 3s\nsim: 100%  done in 4s\n"
	if got := buf.String(); got != want {
		t.Errorf("output %q, want %q", got, want)
	}
}

func TestProgressQuickRun(t *testing.T) {
	var buf bytes.Buffer
	clk := newFakeClock()
	p := clk.progress(&buf, false)
	for done := 0.0; done <= 200; done++ {
		clk.advance(time.Millisecond)
		p.Set(done)
	}
	p.Finish()
	if got, want := buf.String(), "sim: 100%  done in 201ms\n"; got != want {
		t.Errorf("output %q, want only %q", got, want)
	}
}

func TestProgressTerminal(t *testing.T) {
	var buf bytes.Buffer
	clk := newFakeClock()
	p := clk.progress(&buf, true)
	p.Set(0) // first draw: 0 %, ETA unknown
	if got, want := buf.String(), "\rsim [>                             ]   0%  ETA ?"; got != want {
		t.Errorf("first draw %q, want %q", got, want)
	}
	buf.Reset()
	clk.advance(50 * time.Millisecond)
	p.Set(100) // 50 %, but under 100 ms since the last draw
	if buf.Len() != 0 {
		t.Errorf("redrew within 100 ms: %q", buf.String())
	}
	clk.advance(50 * time.Millisecond)
	p.Set(100) // 100 ms later: draws
	if got, want := buf.String(), "\rsim [===============>              ]  50%  ETA 100ms"; got != want {
		t.Errorf("second draw %q, want %q", got, want)
	}
	buf.Reset()
	clk.advance(time.Second)
	p.Set(100.5) // same whole percentage: no redraw
	if buf.Len() != 0 {
		t.Errorf("redrew with an unchanged percentage: %q", buf.String())
	}
	clk.advance(time.Second)
	p.Finish()
	if got := buf.String(); !strings.HasPrefix(got, "\rsim [==============================] 100%  done in 2s") || !strings.HasSuffix(got, "\n") {
		t.Errorf("final draw %q", got)
	}
}

func TestProgressOddTotals(t *testing.T) {
	for _, total := range []float64{0, -1} {
		var buf bytes.Buffer
		p := newProgress(&buf, "x", total, false, newFakeClock().now)
		p.Set(5)
		p.Finish()
		if got := buf.String(); got != "x: 100%  done in 0s\n" {
			t.Errorf("total %v: %q", total, got)
		}
	}
}

func TestProgressConcurrent(t *testing.T) {
	var buf bytes.Buffer
	p := NewProgress(&buf, "race", 1000) // a bytes.Buffer is not a terminal
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 250 {
				p.Set(float64(g*250 + i))
			}
		}()
	}
	wg.Wait()
	p.Finish()
	if n := strings.Count(buf.String(), "\n"); n > 10 {
		t.Errorf("%d lines, want at most 10:\n%s", n, buf.String())
	}
}
