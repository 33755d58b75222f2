package collector

import (
	"math"
	"sort"

	"github.com/vodascheduler/voda/internal/model"
)

// DefaultSerial is the serial fraction assumed before any job of an
// application was seen at two worker counts.
const DefaultSerial = 0.05

// MinSerial is the least serial fraction a fit may report. Observed rates
// can look superlinear (fewer accumulation steps, better statistical
// efficiency later in training), but a curve that is exactly linear ties
// every allocation for algorithms that maximise total speedup, and the
// ties then starve later jobs.
const MinSerial = 0.01

type rateSum struct{ seconds, work float64 }

type history struct {
	app   string
	rates map[int]*rateSum
	// fitted caches fitHistory until the next observation.
	fitted *fit
}

// fit is Amdahl's law for one job or application.
type fit struct {
	rate1  float64 // work per second on one GPU
	serial float64
	ok     bool
	counts int // distinct worker counts behind the fit
}

// Collector keeps observations per job and per application. It is not safe
// for concurrent use.
type Collector struct {
	jobs map[string]*history
	apps map[string]*history
}

// New returns an empty collector.
func New() *Collector {
	return &Collector{jobs: map[string]*history{}, apps: map[string]*history{}}
}

// Observe records that job (of application app) did work in seconds on
// workers GPUs.
func (c *Collector) Observe(job, app string, workers int, seconds, work float64) {
	if workers <= 0 || !(seconds > 0) || math.IsInf(seconds, 0) || work < 0 || math.IsNaN(work) || math.IsInf(work, 0) {
		return
	}
	for _, h := range []*history{c.job(job, app), c.app(app)} {
		r := h.rates[workers]
		if r == nil {
			r = &rateSum{}
			h.rates[workers] = r
		}
		r.seconds += seconds
		r.work += work
		h.fitted = nil
	}
}

// Observation is a stretch of time a job ran on one worker count.
type Observation struct {
	Job, App string
	Workers  int
	Seconds  float64
	// Work is the progress made, in one-GPU seconds.
	Work float64
}

// ObserveAll records observations in order.
func (c *Collector) ObserveAll(obs []Observation) {
	for _, o := range obs {
		c.Observe(o.Job, o.App, o.Workers, o.Seconds, o.Work)
	}
}

// Forget drops a finished job's observations; its application keeps them.
func (c *Collector) Forget(job string) { delete(c.jobs, job) }

func (c *Collector) job(name, app string) *history {
	h := c.jobs[name]
	if h == nil {
		h = &history{app: app, rates: map[int]*rateSum{}}
		c.jobs[name] = h
	}
	return h
}

func (c *Collector) app(name string) *history {
	h := c.apps[name]
	if h == nil {
		h = &history{app: name, rates: map[int]*rateSum{}}
		c.apps[name] = h
	}
	return h
}

// Estimate returns the speedup curve up to maxWorkers and the remaining
// time on one GPU for remainingWork. An unknown remaining time is -1; with
// nothing known the curve is Amdahl's law with DefaultSerial.
func (c *Collector) Estimate(job, app string, remainingWork float64, maxWorkers int) model.Estimates {
	est := model.Estimates{RemainingSeconds: -1}
	f := fitHistory(c.jobs[job])
	af := fitHistory(c.apps[app])
	if !f.ok {
		f = af
	} else if f.counts < 2 && af.ok && af.counts >= 2 {
		// Seen at one count: keep its own speed, borrow the application's
		// scaling.
		f = refit(c.jobs[job], af.serial)
	}
	if !f.ok {
		// Nothing known: Amdahl's law with the default serial fraction is
		// a safer prior than linear scaling, which would make an unseen
		// job look better than every measured one.
		f = fit{serial: DefaultSerial}
	}
	if f.ok && remainingWork >= 0 {
		est.RemainingSeconds = remainingWork / f.rate1
	}
	if maxWorkers < 1 {
		maxWorkers = 1
	}
	est.Speedup = make([]float64, maxWorkers+1)
	for k := 1; k <= maxWorkers; k++ {
		est.Speedup[k] = float64(k) / (1 + f.serial*float64(k-1))
	}
	return est
}

func counts(h *history) []int {
	ks := make([]int, 0, len(h.rates))
	for k, r := range h.rates {
		if r.seconds > 0 && r.work > 0 {
			ks = append(ks, k)
		}
	}
	sort.Ints(ks)
	return ks
}

// fitHistory fits k/rate(k) = a + b(k-1) by least squares, weighting every
// worker count equally: rate1 = 1/a, serial = b/a.
func fitHistory(h *history) fit {
	if h == nil {
		return fit{}
	}
	if h.fitted == nil {
		f := fitRates(h)
		h.fitted = &f
	}
	return *h.fitted
}

func fitRates(h *history) fit {
	ks := counts(h)
	switch len(ks) {
	case 0:
		return fit{}
	case 1:
		return refit(h, DefaultSerial)
	}
	var sx, sy, sxx, sxy float64
	for _, k := range ks {
		r := h.rates[k]
		x := float64(k - 1)
		y := float64(k) / (r.work / r.seconds)
		sx += x
		sy += y
		sxx += x * x
		sxy += x * y
	}
	n := float64(len(ks))
	b := (n*sxy - sx*sy) / (n*sxx - sx*sx)
	a := (sy - b*sx) / n
	if !(a > 0) || math.IsNaN(b) {
		return refit(h, DefaultSerial)
	}
	s := math.Min(math.Max(b/a, MinSerial), 1)
	return fit{rate1: 1 / a, serial: s, ok: true, counts: len(ks)}
}

// refit keeps a given serial fraction and fits only the one-GPU rate:
// the mean over counts of rate(k)(1+s(k-1))/k.
func refit(h *history, serial float64) fit {
	ks := counts(h)
	if len(ks) == 0 {
		return fit{}
	}
	total := 0.0
	for _, k := range ks {
		r := h.rates[k]
		total += r.work / r.seconds * (1 + serial*float64(k-1)) / float64(k)
	}
	return fit{rate1: total / float64(len(ks)), serial: serial, ok: true, counts: len(ks)}
}
