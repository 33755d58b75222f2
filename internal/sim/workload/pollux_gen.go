package workload

import (
	"cmp"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"
)

// PhillyJob is one row of the Philly trace the Pollux artifact samples
// from (traces/philly.csv: timestamp,duration,num_gpus,gpu_time,cluster).
type PhillyJob struct {
	// Line is the row's line in the file, for messages.
	Line int
	// Submit is the submission time.
	Submit time.Time
	// Duration is the run time in seconds and GPUTime the GPU-seconds.
	Duration, GPUTime float64
	// GPUs is the number of GPUs the job used.
	GPUs int
}

// phillyLayouts are the timestamp forms ReadPhilly accepts.
var phillyLayouts = []string{"2006-01-02 15:04:05", "2006-01-02T15:04:05", time.RFC3339}

// ReadPhilly reads a Philly trace in the Pollux artifact's form: a CSV
// with at least the columns timestamp ("2006-01-02 15:04:05", taken as
// UTC), duration (seconds), num_gpus and gpu_time (GPU-seconds). Errors
// are LineErrors naming the line and column.
func ReadPhilly(r io.Reader) ([]PhillyJob, error) {
	t, err := newTable(r, tableSpec{required: []string{"timestamp", "duration", "num_gpus", "gpu_time"}})
	if err != nil {
		return nil, err
	}
	var out []PhillyJob
	err = t.each(func() error {
		ts, err := t.required("timestamp")
		if err != nil {
			return err
		}
		var at time.Time
		for _, layout := range phillyLayouts {
			if at, err = time.Parse(layout, ts); err == nil {
				break
			}
		}
		if err != nil {
			return t.err("timestamp", "%q is not a time like 2017-10-09 07:01:55", ts)
		}
		j := PhillyJob{Line: t.line, Submit: at.UTC()}
		if j.Duration, err = t.seconds("duration"); err != nil {
			return err
		}
		if j.GPUTime, err = t.seconds("gpu_time"); err != nil {
			return err
		}
		if j.GPUs, err = t.integer("num_gpus", 0); err != nil {
			return err
		}
		out = append(out, j)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, t.noJobs()
	}
	return out, nil
}

// PolluxConfig is a fixed configuration a generated job may get: replicas
// and a global batch size. The caller computes them per application (see
// perfmodel.Profiled.Configurations).
type PolluxConfig struct {
	Replicas, Batch int
}

// PolluxGenOptions configures GeneratePollux. DefaultPolluxGenOptions
// gives the artifact's settings.
type PolluxGenOptions struct {
	// Jobs is the number of jobs at load 1.
	Jobs int
	// Load multiplies Jobs (rounded to the nearest job); the submission
	// window stays the same, so load 2 means twice the arrival rate. The
	// artifact's workloads-2.0 are built this way. 0 means 1.
	Load float64
	// Seed selects the workload: equal options and trace give equal jobs.
	Seed uint64
	// Start shifts the trace's clock back by this many hours (0-23)
	// before the time of day is taken.
	Start int
	// Hours keeps jobs submitted in the first Hours hours (1-24) of the
	// shifted day; submissions lie in [0, Hours*3600) seconds.
	Hours int
	// Configs maps each application to the configurations jobs draw from
	// uniformly. It must cover every application in PolluxGenApps.
	Configs map[string][]PolluxConfig
	// MultiGPUShare is the fraction of jobs, in [0, 1], whose workers hold
	// several GPUs: each such job draws G uniformly from GPUsPerWorker and
	// rounds its replicas up to whole workers of G. 0 (the artifact's
	// workloads) draws nothing, so the other jobs are the same as without.
	MultiGPUShare float64
	// GPUsPerWorker lists the G a multi-GPU job draws from; empty means
	// DefaultGenGPUsPerWorker.
	GPUsPerWorker []int
}

// DefaultGenGPUsPerWorker is the G a multi-GPU generated job draws from.
func DefaultGenGPUsPerWorker() []int { return []int{2, 4, 8} }

// Defaults of the Pollux artifact's generator.
const (
	DefaultPolluxJobs  = 160
	DefaultPolluxStart = 2
	DefaultPolluxHours = 8
)

// DefaultPolluxGenOptions returns the artifact's settings: 160 jobs, load
// 1, the trace shifted back 2 hours, 8 hours of submissions.
func DefaultPolluxGenOptions() PolluxGenOptions {
	return PolluxGenOptions{Jobs: DefaultPolluxJobs, Load: 1, Start: DefaultPolluxStart, Hours: DefaultPolluxHours}
}

// PolluxGenApps returns the applications GeneratePollux assigns.
func PolluxGenApps() []string {
	return []string{"bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3"}
}

// Trace filters and application classes, in seconds and GPU-seconds.
const (
	polluxMinDuration = 60.0
	polluxMaxGPUTime  = 1000 * 3600.0
)

// PCG streams: one per independent choice, so that adding or removing a
// kind of choice leaves the others alone.
const (
	streamSample   uint64 = 0x706f6c6c // "poll"
	streamApp      uint64 = 0x61707073 // "apps"
	streamBert     uint64 = 0x62657274 // "bert"
	streamMultiGPU uint64 = 0x67707573 // "gpus"
)

// GeneratePollux samples a workload from a Philly trace the way the Pollux
// OSDI'21 artifact's workload generator does (its simulator/workload.py):
//
//   - Keep the rows that ran at least 60 s and used under 1000 GPU-hours.
//   - Move each submission time back Start hours and keep the rows whose
//     hour of day is then below Hours.
//   - Draw round(Jobs*Load) of these rows uniformly without replacement.
//     The draw is a partial Fisher-Yates shuffle, so a larger load keeps
//     the jobs of a smaller one with the same seed and adds more, as the
//     artifact's workloads-2.0 extend its workloads.
//   - A job is submitted at its shifted time of day, in whole seconds.
//   - Its application follows its GPU time: under 1 GPU-hour cifar10 or
//     ncf (even odds), under 10 deepspeech2, of which a separate fair coin
//     turns half into bert, under 100 yolov3, else imagenet.
//   - Its replicas and batch size are drawn uniformly from Configs of its
//     application.
//
// Jobs are sorted by submission time (stably, in draw order for equal
// times) and the i-th (from 0) is named "<application>-<i>". They have
// MinWorkers 1, Requested and MaxWorkers the replicas, the batch size and
// WidenMax, as ReadPollux gives. The random numbers come from PCG
// generators seeded with Seed (one stream for the draw, one for the
// applications and configurations, one for the bert coin and its
// configuration); they are not Python's, so a seed does not reproduce an
// artifact workload, only its distribution.
func GeneratePollux(trace []PhillyJob, opts PolluxGenOptions) ([]Job, error) {
	if opts.Jobs < 1 {
		return nil, fmt.Errorf("generate pollux workload: jobs %d, want at least 1", opts.Jobs)
	}
	load := opts.Load
	if load == 0 {
		load = 1
	}
	if !(load > 0) || math.IsInf(load, 0) {
		return nil, fmt.Errorf("generate pollux workload: load %v, want a positive number", opts.Load)
	}
	if opts.Start < 0 || opts.Start > 23 {
		return nil, fmt.Errorf("generate pollux workload: start %d, want 0-23 hours", opts.Start)
	}
	if opts.Hours < 1 || opts.Hours > 24 {
		return nil, fmt.Errorf("generate pollux workload: hours %d, want 1-24", opts.Hours)
	}
	for _, app := range PolluxGenApps() {
		cs := opts.Configs[app]
		if len(cs) == 0 {
			return nil, fmt.Errorf("generate pollux workload: no configurations for %s", app)
		}
		for _, c := range cs {
			if c.Replicas < 1 || c.Batch < 1 {
				return nil, fmt.Errorf("generate pollux workload: %s configuration %+v: replicas and batch must be at least 1", app, c)
			}
		}
	}
	if !(opts.MultiGPUShare >= 0 && opts.MultiGPUShare <= 1) {
		return nil, fmt.Errorf("generate pollux workload: multi-GPU share %v, want a number in [0, 1]", opts.MultiGPUShare)
	}
	gs := opts.GPUsPerWorker
	if len(gs) == 0 {
		gs = DefaultGenGPUsPerWorker()
	}
	for _, g := range gs {
		if g < 1 || g > MaxGPUsPerWorker {
			return nil, fmt.Errorf("generate pollux workload: %d GPUs per worker, want 1 to %d", g, MaxGPUsPerWorker)
		}
	}
	n := int(math.Round(float64(opts.Jobs) * load))
	if n < 1 {
		return nil, fmt.Errorf("generate pollux workload: %d jobs at load %v rounds to none", opts.Jobs, load)
	}

	type row struct {
		tod     int // shifted time of day, seconds
		gpuTime float64
	}
	var rows []row
	shift := time.Duration(opts.Start) * time.Hour
	for _, j := range trace {
		if j.Duration < polluxMinDuration || !(j.GPUTime < polluxMaxGPUTime) {
			continue
		}
		at := j.Submit.Add(-shift)
		if at.Hour() >= opts.Hours {
			continue
		}
		rows = append(rows, row{tod: at.Hour()*3600 + at.Minute()*60 + at.Second(), gpuTime: j.GPUTime})
	}
	if len(rows) < n {
		return nil, fmt.Errorf("generate pollux workload: want %d jobs but only %d trace rows pass the filters (duration >= 60 s, under 1000 GPU-hours, hour < %d after shifting %d h)",
			n, len(rows), opts.Hours, opts.Start)
	}

	sample := rand.New(rand.NewPCG(opts.Seed, streamSample))
	apps := rand.New(rand.NewPCG(opts.Seed, streamApp))
	bert := rand.New(rand.NewPCG(opts.Seed, streamBert))
	multi := rand.New(rand.NewPCG(opts.Seed, streamMultiGPU))
	draw := func(rng *rand.Rand, app string) PolluxConfig {
		cs := opts.Configs[app]
		return cs[rng.IntN(len(cs))]
	}
	jobs := make([]Job, n)
	for i := range jobs {
		k := i + sample.IntN(len(rows)-i)
		rows[i], rows[k] = rows[k], rows[i]
		r := rows[i]
		var app string
		var cfg PolluxConfig
		switch h := r.gpuTime / 3600; {
		case h < 1:
			app = []string{"cifar10", "ncf"}[apps.IntN(2)]
			cfg = draw(apps, app)
		case h < 10:
			app = "deepspeech2"
			cfg = draw(apps, app)
			if bert.IntN(2) == 1 {
				app = "bert"
				cfg = draw(bert, app)
			}
		case h < 100:
			app = "yolov3"
			cfg = draw(apps, app)
		default:
			app = "imagenet"
			cfg = draw(apps, app)
		}
		jobs[i] = Job{
			Submit:     float64(r.tod),
			App:        app,
			MinWorkers: 1,
			MaxWorkers: cfg.Replicas,
			Requested:  cfg.Replicas,
			BatchSize:  cfg.Batch,
			WidenMax:   true,
		}
		if opts.MultiGPUShare > 0 && multi.Float64() < opts.MultiGPUShare {
			g := gs[multi.IntN(len(gs))]
			w := (cfg.Replicas + g - 1) / g // whole workers of g, at least the replicas
			jobs[i].GPUsPerWorker, jobs[i].Requested, jobs[i].MaxWorkers = g, w, w
		}
	}
	slices.SortStableFunc(jobs, func(a, b Job) int { return cmp.Compare(a.Submit, b.Submit) })
	for i := range jobs {
		jobs[i].Name = jobs[i].App + "-" + strconv.Itoa(i)
	}
	// Equal times go in name order, as every reader returns jobs.
	Sort(jobs)
	return jobs, nil
}

// WritePollux writes jobs as a Pollux artifact workload (the header
// name,time,application,num_replicas,batch_size, and gpus_per_worker when a
// job's workers hold several GPUs), which ReadPollux and
// `voda simulate --workload` read back. Times are written as whole
// seconds when they are whole.
func WritePollux(w io.Writer, jobs []Job) error {
	cw := csv.NewWriter(w)
	header := []string{"name", "time", "application", "num_replicas", "batch_size"}
	multi := slices.ContainsFunc(jobs, func(j Job) bool { return j.PerWorker() > 1 })
	if multi {
		header = append(header, "gpus_per_worker")
	}
	if err := cw.Write(header); err != nil {
		return err
	}
	for _, j := range jobs {
		if j.Name == "" || j.Requested < 1 {
			return fmt.Errorf("write pollux workload: job %q needs a name and at least one replica", j.Name)
		}
		row := []string{
			j.Name,
			strconv.FormatFloat(j.Submit, 'f', -1, 64),
			j.App,
			strconv.Itoa(j.Requested * j.PerWorker()), // replicas: GPUs
			strconv.Itoa(j.BatchSize),
		}
		if multi {
			row = append(row, strconv.Itoa(j.PerWorker()))
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
