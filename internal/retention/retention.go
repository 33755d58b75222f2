package retention

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"k8s.io/utils/clock"

	"github.com/vodascheduler/voda/internal/metrics"
	"github.com/vodascheduler/voda/internal/store"
)

// Defaults of Config.
const (
	// DefaultInterval is the wall time between two passes.
	DefaultInterval = time.Minute
	// DefaultBatch is how many finished jobs one store call removes: on
	// the embedded store at 100,000 finished jobs, a batch (list, count
	// and remove) takes under 40 ms on two shared cores
	// (docs/server.md#retention), the longest a scheduler's write waits
	// for it.
	DefaultBatch = 500
	// DefaultPause is the least wall time between two batches of a pass.
	DefaultPause = 100 * time.Millisecond
)

// Config configures a Retention. MaxAge or MaxCount, or both, must be set.
type Config struct {
	Store store.Store
	// MaxAge, if positive, removes the jobs that finished longer ago:
	// Status.FinishTime before Clock's now minus MaxAge. A job with no
	// finish time (created finished, or an unreadable record) counts as
	// finished long ago; the store lists those first.
	MaxAge time.Duration
	// MaxCount, if positive, is the most finished jobs kept: the pass
	// removes the oldest (by finish time) beyond it.
	MaxCount int
	// Interval is the wall time between two passes (DefaultInterval if
	// zero).
	Interval time.Duration
	// Batch is how many jobs one store call removes (DefaultBatch if
	// zero; at most store.MaxDeleteFinished).
	Batch int
	// Pause is the least wall time between two batches of a pass
	// (DefaultPause if zero); a batch that took longer is followed by a
	// pause as long, so that a pass never holds the store's writes more
	// than half the time.
	Pause time.Duration
	// Clock is the clock finish times are on: the schedulers', which a
	// simulated cluster runs faster than the wall clock. Wall paces the
	// passes and batches and stamps the last run. Both are the real
	// clock if nil.
	Clock clock.PassiveClock
	Wall  clock.Clock
	// Metrics, if set, gets the removals, the counts and the passes.
	Metrics *metrics.Metrics
	Logger  *slog.Logger
}

// Retention removes finished jobs by Config's rule.
type Retention struct {
	cfg Config
	log *slog.Logger
}

// New checks cfg and returns a Retention.
func New(cfg Config) (*Retention, error) {
	switch {
	case cfg.Store == nil:
		return nil, errors.New("retention: a store is required")
	case cfg.MaxAge < 0:
		return nil, fmt.Errorf("retention: max age %v is negative", cfg.MaxAge)
	case cfg.MaxCount < 0:
		return nil, fmt.Errorf("retention: max count %d is negative", cfg.MaxCount)
	case cfg.MaxAge == 0 && cfg.MaxCount == 0:
		return nil, errors.New("retention: neither a max age nor a max count: nothing to remove")
	case cfg.Interval < 0 || cfg.Pause < 0:
		return nil, errors.New("retention: negative interval or pause")
	case cfg.Batch < 0 || cfg.Batch > store.MaxDeleteFinished:
		return nil, fmt.Errorf("retention: batch %d is not between 1 and %d", cfg.Batch, store.MaxDeleteFinished)
	}
	if cfg.Interval == 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Batch == 0 {
		cfg.Batch = DefaultBatch
	}
	if cfg.Pause == 0 {
		cfg.Pause = DefaultPause
	}
	if cfg.Wall == nil {
		cfg.Wall = clock.RealClock{}
	}
	if cfg.Clock == nil {
		cfg.Clock = cfg.Wall
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if m := cfg.Metrics; m != nil {
		m.RetentionErrors.WithLabelValues() // at 0, so that increase() sees the first
	}
	return &Retention{cfg: cfg, log: log}, nil
}

// Result is what a pass did.
type Result struct {
	// ByAge and ByCount are the jobs it removed, by rule.
	ByAge, ByCount int
	// Batches are the store calls that removed jobs.
	Batches int
	// Live and Finished are the store's jobs after the pass.
	Live, Finished int
}

// Run makes a pass at once and then every Interval until ctx ends, and
// returns nil then. A pass that fails is logged and counted, and the next
// one tries again: retention never stops the process.
func (r *Retention) Run(ctx context.Context) error {
	for {
		start := r.cfg.Wall.Now()
		res, err := r.Pass(ctx)
		took := r.cfg.Wall.Since(start)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			r.log.Error("retention pass failed; the next one retries", "err", err, "removedByAge", res.ByAge, "removedByCount", res.ByCount)
		case res.ByAge+res.ByCount > 0:
			r.log.Info("retention removed finished jobs", "byAge", res.ByAge, "byCount", res.ByCount,
				"batches", res.Batches, "took", took, "finishedKept", res.Finished)
		}
		if m := r.cfg.Metrics; m != nil {
			m.RetentionDuration.WithLabelValues().Observe(took.Seconds())
			if err != nil {
				m.RetentionErrors.WithLabelValues().Inc()
			} else {
				m.RetentionLastRun.WithLabelValues().Set(float64(r.cfg.Wall.Now().UnixNano()) / 1e9)
			}
		}
		if !r.sleep(ctx, r.cfg.Interval) {
			return nil
		}
	}
}

// sleep waits d of wall time, or until ctx ends (false).
func (r *Retention) sleep(ctx context.Context, d time.Duration) bool {
	t := r.cfg.Wall.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}

// Pass removes what the rule says now, a batch at a time, oldest finished
// first, and returns what it did (so far, with an error).
//
// Each round lists the oldest finished jobs, then counts the finished
// jobs, in this order: another process removing from the same oldest end
// meanwhile makes the count smaller, never larger than the list it is
// applied to, so two passes at once remove together what one would.
func (r *Retention) Pass(ctx context.Context) (Result, error) {
	var res Result
	var cutoff time.Time
	if r.cfg.MaxAge > 0 {
		cutoff = r.cfg.Clock.Now().Add(-r.cfg.MaxAge)
	}
	var took time.Duration // the last batch's removals
	for {
		old, err := r.cfg.Store.ListFinished(ctx, r.cfg.Batch)
		if err != nil {
			return res, fmt.Errorf("retention: list finished jobs: %w", err)
		}
		over := 0
		if r.cfg.MaxCount > 0 {
			_, finished, err := r.cfg.Store.CountJobs(ctx)
			if err != nil {
				return res, fmt.Errorf("retention: count jobs: %w", err)
			}
			over = finished - r.cfg.MaxCount
		}
		// The list is oldest first: the count's excess, then those past
		// the age, then none, as every later one is younger.
		var byCount, byAge []string
		for _, j := range old {
			if len(byCount) < over {
				byCount = append(byCount, j.Name)
			} else if !cutoff.IsZero() && j.FinishTime.Before(cutoff) {
				byAge = append(byAge, j.Name)
			} else {
				break
			}
		}
		if len(byCount)+len(byAge) == 0 {
			break
		}
		if res.Batches > 0 {
			// At least Pause, and as long as the last batch took, so
			// that a pass holds the store's writes at most half the time.
			if !r.sleep(ctx, max(r.cfg.Pause, took)) {
				return res, ctx.Err()
			}
		}
		start := r.cfg.Wall.Now()
		removed := 0
		for _, b := range []struct {
			names  []string
			reason string
			n      *int
		}{{byCount, metrics.RemovedCount, &res.ByCount}, {byAge, metrics.RemovedAge, &res.ByAge}} {
			if len(b.names) == 0 {
				continue
			}
			n, err := r.cfg.Store.DeleteFinished(ctx, b.names)
			if err != nil {
				return res, fmt.Errorf("retention: remove %d finished jobs: %w", len(b.names), err)
			}
			*b.n += n
			removed += n
			res.Batches++
			if r.cfg.Metrics != nil {
				r.cfg.Metrics.JobsRemoved.WithLabelValues(b.reason).Add(float64(n))
			}
		}
		took = r.cfg.Wall.Since(start)
		// None removed: another process removes the same jobs, and this
		// pass leaves them to it. A short list: nothing older is left.
		if removed == 0 || len(old) < r.cfg.Batch {
			break
		}
	}
	var err error
	if res.Live, res.Finished, err = r.cfg.Store.CountJobs(ctx); err != nil {
		return res, fmt.Errorf("retention: count jobs: %w", err)
	}
	if m := r.cfg.Metrics; m != nil {
		m.LiveJobs.WithLabelValues().Set(float64(res.Live))
		m.FinishedJobs.WithLabelValues().Set(float64(res.Finished))
	}
	return res, nil
}
