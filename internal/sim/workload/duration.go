package workload

import (
	"errors"
	"fmt"
	"io"
	"math"
)

// DurationOptions says how ReadDuration turns a duration-only trace into
// elastic jobs, since such traces carry no scaling information.
type DurationOptions struct {
	// App is the performance (scaling) model given to every job. Required.
	App string
	// MaxFactor sets MaxWorkers = num_gpu * MaxFactor. 0 means 2; 1 makes
	// the jobs rigid upwards.
	MaxFactor int
	// MinWorkers is every job's minimum, capped at its num_gpu. 0 means 1.
	MinWorkers int
}

// DefaultMaxFactor is DurationOptions.MaxFactor when unset.
const DefaultMaxFactor = 2

// ReadDuration reads a duration-only trace in the style of Microsoft's
// Philly trace: a CSV with the header job_id,submission_time,duration,
// num_gpu (extra columns ignored). Times are seconds. Each row becomes a job
// named job_id with Requested = num_gpu and Duration = duration (its run
// time at num_gpu GPUs); opts give the application and the worker range.
// Nothing is skipped silently: a row with num_gpu < 1 or duration <= 0 is
// an error naming its line.
func ReadDuration(r io.Reader, opts DurationOptions) ([]Job, error) {
	if opts.App == "" {
		return nil, errors.New("duration trace: options: App is required (the scaling model given to every job)")
	}
	if opts.MaxFactor < 0 {
		return nil, fmt.Errorf("duration trace: options: MaxFactor %d is negative", opts.MaxFactor)
	}
	if opts.MinWorkers < 0 {
		return nil, fmt.Errorf("duration trace: options: MinWorkers %d is negative", opts.MinWorkers)
	}
	factor := opts.MaxFactor
	if factor == 0 {
		factor = DefaultMaxFactor
	}
	minW := opts.MinWorkers
	if minW == 0 {
		minW = 1
	}

	t, err := newTable(r, tableSpec{
		required: []string{"job_id", "submission_time", "duration", "num_gpu"},
	})
	if err != nil {
		return nil, err
	}
	return t.readAll(func(t *table, seen names) (Job, error) {
		name, err := t.required("job_id")
		if err != nil {
			return Job{}, err
		}
		if err := seen.add(t, "job_id", name); err != nil {
			return Job{}, err
		}
		submit, err := t.seconds("submission_time")
		if err != nil {
			return Job{}, err
		}
		dur, err := t.seconds("duration")
		if err != nil {
			return Job{}, err
		}
		if dur == 0 {
			return Job{}, t.err("duration", "must be > 0")
		}
		gpus, err := t.integer("num_gpu", 1)
		if err != nil {
			return Job{}, err
		}
		if gpus > math.MaxInt/factor {
			return Job{}, t.err("num_gpu", "%d times MaxFactor %d overflows", gpus, factor)
		}
		return Job{
			Name:       name,
			Submit:     submit,
			App:        opts.App,
			MinWorkers: min(minW, gpus),
			MaxWorkers: gpus * factor,
			Requested:  gpus,
			Duration:   dur,
		}, nil
	})
}
