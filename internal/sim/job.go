package sim

import (
	"fmt"
	"math"
	"time"

	"github.com/vodascheduler/voda/internal/sim/perfmodel"
)

// JobProgress is how one training job advances under its performance
// model: its placement, batch size, epochs and the restart it pays after
// every new placement. The trace simulator's jobs and the server's
// simulated cluster (internal/sim/livecluster) both advance through it, so
// that the same job on the same placements finishes at the same virtual
// time in both.
type JobProgress struct {
	name     string
	m        perfmodel.Model
	batch    int
	epochs   int
	perEpoch float64 // progress per epoch for duration jobs; 0 = model's
	done     bool

	epoch    int
	progress float64
	rescale  float64 // seconds of restart left
	place    []int   // GPUs per node (workers x G), in the order the core placed them
	rate     float64
	rateOK   bool

	end        float64
	gpuSeconds float64

	// observed since the caller last cleared them.
	obsSeconds, obsWork float64
}

// NewJobProgress returns job name's progress under model m at global
// batch size batch (the model's default when <= 0) for epochs epochs (the
// model's default when <= 0), not yet placed.
func NewJobProgress(name string, m perfmodel.Model, batch, epochs int) *JobProgress {
	j := &JobProgress{}
	j.init(name, m, batch, epochs)
	return j
}

func (j *JobProgress) init(name string, m perfmodel.Model, batch, epochs int) {
	j.name, j.m, j.batch, j.epochs, j.end = name, m, batch, epochs, -1
	if j.batch <= 0 {
		j.batch = m.DefaultBatch()
	}
	if j.epochs <= 0 {
		j.epochs = m.DefaultEpochs()
	}
}

// Batch returns the global batch size the job trains at.
func (j *JobProgress) Batch() int { return j.batch }

// SetBatch makes the job train at global batch size b from now on.
func (j *JobProgress) SetBatch(b int) {
	j.batch = b
	j.rateOK = false
}

// Epochs returns the epochs the job trains in all.
func (j *JobProgress) Epochs() int { return j.epochs }

// Epoch returns the epochs the job has completed.
func (j *JobProgress) Epoch() int { return j.epoch }

// Restarting reports whether the job holds workers but is still paying
// the restart of its last placement.
func (j *JobProgress) Restarting() bool { return j.workers() > 0 && j.rescale > 0 }

// RestartLeft is how long the restart of the job's last placement still
// takes (0 when none is under way).
func (j *JobProgress) RestartLeft() time.Duration {
	if !j.Restarting() {
		return 0
	}
	return time.Duration(math.Ceil(j.rescale * 1e9))
}

// Placement returns the job's workers per node, in the order placed.
func (j *JobProgress) Placement() []int { return j.place }

// Work returns the progress done and the progress of the whole job, in
// the model's units.
func (j *JobProgress) Work() (done, total float64) { return j.progress, j.epochProgress(j.epochs) }

// EpochsDone returns the epochs done, fractional within the current one.
func (j *JobProgress) EpochsDone() float64 {
	if j.done {
		return float64(j.epochs)
	}
	lo, hi := j.epochProgress(j.epoch), j.epochProgress(j.epoch+1)
	f := 0.0
	if hi > lo {
		f = math.Min(math.Max((j.progress-lo)/(hi-lo), 0), 1)
	}
	return float64(j.epoch) + f
}

// Resume sets the job's progress to the fraction f of its work, as a job
// restarted from a checkpoint: the epochs that fraction completes are
// done.
func (j *JobProgress) Resume(f float64) {
	total := j.epochProgress(j.epochs)
	j.progress = total * math.Min(math.Max(f, 0), 1)
	j.epoch = 0
	for j.epoch < j.epochs && j.epochProgress(j.epoch+1) <= j.progress {
		j.epoch++
	}
	j.done = j.epoch >= j.epochs
	j.rateOK = false
}

// Place moves the job's workers to place (GPUs per node: workers x G, as
// the performance models take placements); a non-empty
// placement restarts the job, which then makes no progress for restart
// seconds.
func (j *JobProgress) Place(place []int, restart float64) {
	j.place = append(j.place[:0], place...)
	j.rateOK = false
	if len(j.place) > 0 {
		j.rescale = restart
	}
}

// workers returns the GPUs the job holds: a process each, as a model and
// a progress report count them.
func (j *JobProgress) workers() int { return sumInts(j.place) }

func (j *JobProgress) epochProgress(e int) float64 {
	if j.perEpoch > 0 {
		return float64(e) * j.perEpoch
	}
	return j.m.EpochProgress(e)
}

func (j *JobProgress) currentRate() (float64, error) {
	if j.rateOK {
		return j.rate, nil
	}
	r, err := j.m.Rate(j.place, j.batch, j.epoch)
	if err != nil {
		return 0, fmt.Errorf("job %s: %w", j.name, err)
	}
	if !(r > 0) {
		return 0, fmt.Errorf("job %s: model %s gives rate %g on %v", j.name, j.m.Name(), r, j.place)
	}
	j.rate, j.rateOK = r, true
	return r, nil
}

// stepHooks let the caller of step see the job train: before runs ahead
// of every stretch at one rate, ran after it with its seconds and
// progress, epochEnd after every epoch but the last. Any may be nil.
type stepHooks struct {
	// span, if not nil, is called with every stretch of time the job
	// trains at one configuration, [from, to), before the epoch that ends
	// it changes anything.
	span     func(from, to float64) error
	ran      func(seconds, work float64)
	epochEnd func() error
}

// Advance trains the job for dt seconds from now (epoch ends at exact
// times), calling epochEnd, if not nil, after every epoch but the last,
// and ran, if not nil, with the seconds and progress of every stretch at
// one rate.
func (j *JobProgress) Advance(now, dt float64, ran func(seconds, work float64), epochEnd func() error) error {
	return j.step(now, dt, false, stepHooks{ran: ran, epochEnd: epochEnd})
}

// step advances a running job by dt seconds from now. With round set,
// epoch boundaries fall on whole seconds as in the Pollux artifact.
func (j *JobProgress) step(now, dt float64, round bool, h stepHooks) error {
	k := float64(j.workers())
	if k == 0 || j.done {
		return nil
	}
	delay := math.Min(j.rescale, dt)
	j.gpuSeconds += delay * k
	j.rescale -= delay
	dt -= delay
	now += delay
	for dt > 0 && !j.done {
		rate, err := j.currentRate()
		if err != nil {
			return err
		}
		next := j.epochProgress(j.epoch + 1)
		if j.progress+rate*dt < next {
			if h.span != nil {
				if err := h.span(now, now+dt); err != nil {
					return err
				}
			}
			j.progress += rate * dt
			j.gpuSeconds += dt * k
			j.obsSeconds += dt
			j.obsWork += rate * dt
			if h.ran != nil {
				h.ran(dt, rate*dt)
			}
			now += dt
			dt = 0
			break
		}
		delta := (next - j.progress) / rate
		if round {
			delta = math.RoundToEven(delta)
		}
		delta = math.Min(delta, dt)
		if h.span != nil {
			if err := h.span(now, now+delta); err != nil {
				return err
			}
		}
		j.obsSeconds += delta
		j.obsWork += next - j.progress
		if h.ran != nil {
			h.ran(delta, next-j.progress)
		}
		j.epoch++
		j.rateOK = false
		j.progress = next
		now += delta
		j.gpuSeconds += delta * k
		dt -= delta
		if j.epoch >= j.epochs {
			j.done = true
			j.end = now
		} else if h.epochEnd != nil {
			if err := h.epochEnd(); err != nil {
				return err
			}
		}
	}
	return nil
}

// Ended returns when the job's last epoch ended, on the clock its steps
// were given (Advance's now), and whether it has.
func (j *JobProgress) Ended() (float64, bool) { return j.end, j.done }

// FinishIn returns the seconds until the job completes if nothing
// changes: what is left of its restart, then each epoch at its rate.
func (j *JobProgress) FinishIn() (float64, error) {
	if j.workers() == 0 || j.done {
		return math.Inf(1), nil
	}
	t := j.rescale
	p := j.progress
	for e := j.epoch; e < j.epochs; e++ {
		r, err := j.m.Rate(j.place, j.batch, e)
		if err != nil {
			return 0, fmt.Errorf("job %s: %w", j.name, err)
		}
		t += (j.epochProgress(e+1) - p) / r
		p = j.epochProgress(e + 1)
	}
	return t, nil
}

// Finish marks a job whose remaining work is within rounding error of
// none as done at now, and reports whether it is done.
func (j *JobProgress) Finish(now float64) bool {
	if !j.done && j.workers() > 0 && j.rescale <= 0 {
		if left := j.epochProgress(j.epochs) - j.progress; left <= 1e-9*math.Max(1, j.epochProgress(j.epochs)) {
			j.done, j.end = true, now
		}
	}
	return j.done
}
