package report

import (
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"
)

// Progress draws a progress bar, typically on stderr, for a long
// simulation. On a terminal it redraws one line in place, at most every
// 100 ms of real time and only when the whole percentage changes; elsewhere
// (a file, a pipe, a CI log) it prints a plain line per 10 %, at most one a
// second, and a last line with the elapsed time. It uses the
// wall clock, which is fine here: the report is outside the simulator's
// deterministic core, and the bar changes nothing but its own output.
// Progress is safe for use by several goroutines. Write errors are
// ignored: a progress bar must not fail a simulation.
type Progress struct {
	mu    sync.Mutex
	w     io.Writer
	label string
	total float64
	tty   bool
	now   func() time.Time

	start    time.Time
	lastDraw time.Time
	lastPct  int // last percentage drawn; -1 before the first
	lastLen  int // length of the last terminal line, to blank leftovers
	// lastDecile is the last tenth printed when not on a terminal.
	lastDecile int
	done       float64
	finished   bool
}

const (
	progressInterval    = 100 * time.Millisecond
	progressLogInterval = time.Second
	progressBarWidth    = 30
)

// NewProgress returns a progress bar for work measured in total units
// (simulated seconds, jobs...), labelled label.
func NewProgress(w io.Writer, label string, total float64) *Progress {
	tty := false
	if f, ok := w.(*os.File); ok {
		tty = term.IsTerminal(int(f.Fd()))
	}
	return newProgress(w, label, total, tty, time.Now)
}

func newProgress(w io.Writer, label string, total float64, tty bool, now func() time.Time) *Progress {
	start := now()
	return &Progress{w: w, label: label, total: total, tty: tty, now: now, start: start, lastDraw: start, lastPct: -1}
}

// Set records that done units of the total are finished, and redraws if
// it is time to.
func (p *Progress) Set(done float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finished {
		return
	}
	p.done = done
	pct := p.percent()
	now := p.now()
	if p.tty {
		if pct == p.lastPct || (p.lastPct >= 0 && now.Sub(p.lastDraw) < progressInterval) {
			return
		}
		p.drawTTY(pct, now, false)
	} else {
		// A line at 10, 20 ... 90 %, at most one a second so that a
		// quick run prints only Finish's line.
		decile := pct / 10
		if decile <= p.lastDecile || decile >= 10 || now.Sub(p.lastDraw) < progressLogInterval {
			return
		}
		p.lastDecile = decile
		fmt.Fprintf(p.w, "%s: %3d%%  elapsed %s  ETA %s\n", p.label, decile*10, dur(now.Sub(p.start)), p.eta(now))
	}
	p.lastPct, p.lastDraw = pct, now
}

// Finish draws the bar complete with the elapsed time and ends its line.
// Later calls of Set and Finish do nothing.
func (p *Progress) Finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finished {
		return
	}
	p.finished = true
	now := p.now()
	if p.tty {
		p.drawTTY(100, now, true)
		fmt.Fprintln(p.w)
		return
	}
	fmt.Fprintf(p.w, "%s: 100%%  done in %s\n", p.label, dur(now.Sub(p.start)))
}

// percent is the whole percentage done, clamped to [0, 100].
func (p *Progress) percent() int {
	if !(p.total > 0) || math.IsNaN(p.done) {
		return 0
	}
	f := p.done / p.total
	return int(math.Floor(100 * min(1, max(0, f))))
}

func (p *Progress) drawTTY(pct int, now time.Time, final bool) {
	filled := pct * progressBarWidth / 100
	bar := strings.Repeat("=", filled)
	if filled < progressBarWidth {
		bar += ">" + strings.Repeat(" ", progressBarWidth-filled-1)
	}
	tail := "ETA " + p.eta(now)
	if final {
		tail = "done in " + dur(now.Sub(p.start))
	}
	line := fmt.Sprintf("%s [%s] %3d%%  %s", p.label, bar, pct, tail)
	pad := ""
	if n := len(line); n < p.lastLen {
		pad = strings.Repeat(" ", p.lastLen-n)
	}
	p.lastLen = len(line)
	fmt.Fprintf(p.w, "\r%s%s", line, pad)
}

// eta extrapolates the rate so far; "?" until there is progress.
func (p *Progress) eta(now time.Time) string {
	if !(p.total > 0) || !(p.done > 0) {
		return "?"
	}
	elapsed := now.Sub(p.start)
	frac := min(1, p.done/p.total)
	return dur(time.Duration(float64(elapsed) * (1 - frac) / frac))
}

func dur(d time.Duration) string {
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}
