package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vodascheduler/voda/internal/api"
	"github.com/vodascheduler/voda/internal/api/client"
	"github.com/vodascheduler/voda/internal/jobspec"
	"github.com/vodascheduler/voda/internal/sim"
	"github.com/vodascheduler/voda/internal/sim/report"
)

// Defaults of Config's zero fields.
const (
	DefaultInFlight = 1
	DefaultPoll     = 500 * time.Millisecond
)

// busyRetries is how often a submission answered 429 or 503 is tried
// again, a second apart, before the replay gives up.
const busyRetries = 30

// Config configures a replay.
type Config struct {
	Client *client.Client
	// GPUType is the scheduler whose cluster runs the jobs; empty means
	// the server's only one.
	GPUType string
	// Jobs are the workload's jobs as the simulator runs them
	// (sim.Settings), in submission order.
	Jobs []sim.JobSettings
	// InFlight bounds the submissions under way at once (DefaultInFlight
	// if zero: one at a time keeps the workload's order for jobs due
	// together, which decides ties in the scheduler's queue).
	InFlight int
	// Poll is the wall time between two reads of the server's jobs while
	// waiting (DefaultPoll if zero).
	Poll time.Duration
	// Progress, if set, is called after every read of the server's jobs.
	Progress func(Status)
}

// Status is how far a replay is.
type Status struct {
	Submitted, Done, Total int
	// Elapsed is the server's virtual time since the replay began.
	Elapsed time.Duration
}

// Result is what the server made of a replayed workload.
type Result struct {
	// Scheduler is the GPU type's scheduler as the replay began.
	Scheduler api.Scheduler
	// Run holds the jobs as the simulator's reports do, times in seconds
	// of the server's clock since the replay began, named as in the
	// workload; Jobs[i].Done is false for a job that did not complete.
	Run *report.Run
	// Names are the names the server gave the jobs, by workload name.
	Names map[string]string
	// ClockRate is the server's virtual seconds per wall second, as
	// measured during the replay.
	ClockRate float64
}

// Scheduler returns the scheduler of gpuType, or the server's only one
// when gpuType is empty. A scheduler that has just started shows neither
// its time nor its nodes until its first turn: Scheduler waits up to
// clockWait for them.
func Scheduler(ctx context.Context, c *client.Client, gpuType string) (api.Scheduler, error) {
	for start := time.Now(); ; {
		s, err := findScheduler(ctx, c, gpuType)
		if err != nil || s.Now != nil || time.Since(start) > clockWait {
			return s, err
		}
		gpuType = s.GPUType
		select {
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			return s, ctx.Err()
		}
	}
}

func findScheduler(ctx context.Context, c *client.Client, gpuType string) (api.Scheduler, error) {
	if gpuType != "" {
		s, err := c.GetScheduler(ctx, gpuType)
		if err != nil {
			return s, fmt.Errorf("scheduler %s: %w", gpuType, err)
		}
		return s, nil
	}
	all, err := c.ListSchedulers(ctx)
	if err != nil {
		return api.Scheduler{}, fmt.Errorf("list schedulers: %w", err)
	}
	if len(all) != 1 {
		types := make([]string, len(all))
		for i, s := range all {
			types[i] = s.GPUType
		}
		return api.Scheduler{}, fmt.Errorf("the server has %d GPU types (%s): name one with --gpu-type", len(all), strings.Join(types, ", "))
	}
	return all[0], nil
}

// errNoClock is a scheduler status without the scheduler's time.
var errNoClock = errors.New("the scheduler reports no time (is it running?)")

// clockWait is how long Run waits for a scheduler to show its time.
const clockWait = 10 * time.Second

// clock reads the server's virtual time from its scheduler status.
func (r *replayer) clock(ctx context.Context) (time.Time, error) {
	s, err := r.cfg.Client.GetScheduler(ctx, r.gpuType)
	if err != nil {
		return time.Time{}, fmt.Errorf("read the server's clock: %w", err)
	}
	if s.Now == nil {
		return time.Time{}, fmt.Errorf("read the server's clock: scheduler %s: %w", r.gpuType, errNoClock)
	}
	now := *s.Now
	wall := time.Now()
	if r.wall0.IsZero() {
		r.wall0, r.virt0 = wall, now
	} else if w := wall.Sub(r.wall0); w >= 200*time.Millisecond {
		r.rate = now.Sub(r.virt0).Seconds() / w.Seconds()
	}
	return now, nil
}

type replayer struct {
	cfg     Config
	gpuType string
	t0      time.Time
	// wall0 and virt0 are the first reading of the server's clock, from
	// which rate, its virtual seconds per wall second, is measured.
	wall0, virt0 time.Time
	rate         float64

	mu        sync.Mutex
	names     map[string]int // server name -> index in cfg.Jobs
	submitted int
}

// Run submits every job to the server at its submission time on the
// server's clock (read through the API, not assumed), waits until all
// are finished or ctx ends, and reads them back. A job the server
// refuses ends the replay with the server's reason and field. When ctx
// ends first, the result holds what had finished, with ctx's error.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.Client == nil {
		return nil, errors.New("replay: no client")
	}
	if len(cfg.Jobs) == 0 {
		return nil, errors.New("replay: empty workload")
	}
	if cfg.InFlight <= 0 {
		cfg.InFlight = DefaultInFlight
	}
	if cfg.Poll <= 0 {
		cfg.Poll = DefaultPoll
	}
	sched, err := Scheduler(ctx, cfg.Client, cfg.GPUType)
	if err != nil {
		return nil, err
	}
	r := &replayer{cfg: cfg, gpuType: sched.GPUType, names: map[string]int{}}
	if r.t0, err = r.clock(ctx); err != nil {
		return nil, err
	}
	subCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	subErr := make(chan error, 1)
	go func() {
		err := r.submitAll(subCtx)
		if err != nil {
			cancel()
		}
		subErr <- err
	}()
	jobs, waitErr := r.wait(subCtx)
	cancel()
	if err := <-subErr; err != nil && !errors.Is(err, context.Canceled) {
		return nil, err
	}
	res := r.result(sched, jobs)
	if waitErr != nil {
		return res, waitErr
	}
	return res, nil
}

// submitAll submits the jobs as they fall due, at most InFlight at once.
func (r *replayer) submitAll(ctx context.Context) error {
	slots := make(chan struct{}, r.cfg.InFlight)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if first == nil {
			first = err
		}
	}
	failed := func() error {
		mu.Lock()
		defer mu.Unlock()
		return first
	}
	next := 0
	for next < len(r.cfg.Jobs) && failed() == nil {
		now, err := r.clock(ctx)
		if err != nil {
			fail(err)
			break
		}
		for next < len(r.cfg.Jobs) && !r.due(next).After(now) {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				wg.Wait()
				return ctx.Err()
			}
			i := next
			next++
			wg.Go(func() {
				defer func() { <-slots }()
				if err := r.submit(ctx, i); err != nil {
					fail(err)
				}
			})
		}
		if next == len(r.cfg.Jobs) {
			break
		}
		// Sleep until the next job is due by the clock's measured rate,
		// at most a second of wall time, then read the clock again.
		wait := 20 * time.Millisecond
		if r.rate > 0 {
			wait = time.Duration(r.due(next).Sub(now).Seconds() / r.rate * float64(time.Second))
			wait = min(max(wait, time.Millisecond), time.Second)
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			wg.Wait()
			return ctx.Err()
		}
	}
	wg.Wait()
	return failed()
}

func (r *replayer) due(i int) time.Time {
	return r.t0.Add(time.Duration(r.cfg.Jobs[i].Submit * float64(time.Second)))
}

// submit creates job i, trying again while the server says it is busy.
func (r *replayer) submit(ctx context.Context, i int) error {
	j := r.cfg.Jobs[i]
	manifest, err := Manifest(j, r.gpuType)
	if err != nil {
		return err
	}
	for try := 0; ; try++ {
		created, err := r.cfg.Client.CreateJob(ctx, manifest)
		var ae *client.APIError
		if errors.As(err, &ae) && (ae.StatusCode == http.StatusTooManyRequests || ae.StatusCode == http.StatusServiceUnavailable) && try < busyRetries {
			select {
			case <-time.After(time.Second):
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if err != nil {
			if errors.As(err, &ae) {
				return fmt.Errorf("job %s refused: %s (reason %s, field %q)", j.Name, ae.Message, ae.Reason, ae.Field)
			}
			return fmt.Errorf("submit job %s: %w", j.Name, err)
		}
		r.mu.Lock()
		r.names[created.Name] = i
		r.submitted++
		r.mu.Unlock()
		return nil
	}
}

// wait reads the server's jobs every Poll until every job of the
// workload has been submitted and has finished, or ctx ends; it returns
// the last view of the replay's jobs, by index.
func (r *replayer) wait(ctx context.Context) (map[int]api.Job, error) {
	seen := map[int]api.Job{}
	for {
		jobs, err := r.cfg.Client.ListJobs(ctx, client.ListOptions{GPUType: r.gpuType})
		if err != nil {
			if ctx.Err() != nil {
				return seen, ctx.Err()
			}
			return seen, fmt.Errorf("read the server's jobs: %w", err)
		}
		r.mu.Lock()
		for _, j := range jobs {
			if i, ok := r.names[j.Name]; ok {
				seen[i] = j
			}
		}
		submitted := r.submitted
		r.mu.Unlock()
		done := 0
		var last time.Time
		for _, j := range seen {
			if finished(j) {
				done++
				if j.FinishTime != nil && j.FinishTime.After(last) {
					last = *j.FinishTime
				}
			}
		}
		if r.cfg.Progress != nil {
			now := last
			if r.rate > 0 {
				now = r.virt0.Add(time.Duration(time.Since(r.wall0).Seconds() * r.rate * float64(time.Second)))
			}
			r.cfg.Progress(Status{Submitted: submitted, Done: done, Total: len(r.cfg.Jobs), Elapsed: max(now.Sub(r.t0), 0)})
		}
		if done == len(r.cfg.Jobs) {
			return seen, nil
		}
		select {
		case <-time.After(r.cfg.Poll):
		case <-ctx.Done():
			return seen, ctx.Err()
		}
	}
}

func finished(j api.Job) bool {
	switch j.Status {
	case "Completed", "Failed", "Canceled":
		return true
	}
	return false
}

// result turns the server's view of the jobs into a report.Run.
func (r *replayer) result(sched api.Scheduler, seen map[int]api.Job) *Result {
	res := &Result{Scheduler: sched, Names: map[string]string{}, ClockRate: r.rate,
		Run: &report.Run{Algorithm: sched.Algorithm, GPUs: sched.GPUs}}
	secs := func(t *time.Time) float64 {
		if t == nil {
			return -1
		}
		return t.Sub(r.t0).Seconds()
	}
	for name, i := range r.names {
		res.Names[r.cfg.Jobs[i].Name] = name
	}
	for i, s := range r.cfg.Jobs {
		jr := report.JobResult{Name: s.Name, App: s.App, Submit: -1, Start: -1, End: -1,
			MinWorkers: s.MinWorkers, MaxWorkers: s.MaxWorkers, Requested: s.Requested}
		if j, ok := seen[i]; ok {
			submit := j.SubmitTime
			jr.Submit, jr.Start, jr.End = secs(&submit), secs(j.FirstStart), secs(j.FinishTime)
			jr.Done = j.Status == "Completed"
		}
		res.Run.Jobs = append(res.Run.Jobs, jr)
		if jr.End > res.Run.EndTime {
			res.Run.EndTime = jr.End
		}
	}
	return res
}

// Manifest is the job j as `voda create` takes it: an elastic MPIJob of
// gpuType whose annotations carry the simulator's settings (performance
// model, worker range, epochs, priority). Its name is the workload's,
// made a DNS label.
func Manifest(j sim.JobSettings, gpuType string) ([]byte, error) {
	name := dnsLabel(j.Name)
	if name == "" {
		return nil, fmt.Errorf("job %q: no letter or digit to name it by", j.Name)
	}
	container := func(name string, gpu bool) map[string]any {
		c := map[string]any{"name": name, "image": "replay/" + dnsLabel(j.App)}
		if gpu {
			c["resources"] = map[string]any{"limits": map[string]any{"nvidia.com/gpu": max(j.GPUsPerWorker, 1)}}
		}
		return c
	}
	template := func(c map[string]any) map[string]any {
		return map[string]any{"spec": map[string]any{"containers": []any{c}}}
	}
	m := map[string]any{
		"apiVersion": jobspec.APIVersionV2Beta1,
		"kind":       jobspec.KindMPIJob,
		"metadata": map[string]any{
			"name": name,
			"annotations": map[string]string{
				jobspec.AnnotationSimModel:   j.App,
				jobspec.AnnotationGPUType:    gpuType,
				jobspec.AnnotationMinWorkers: strconv.Itoa(j.MinWorkers),
				jobspec.AnnotationMaxWorkers: strconv.Itoa(j.MaxWorkers),
				jobspec.AnnotationWorkers:    strconv.Itoa(j.Requested),
				jobspec.AnnotationEpochs:     strconv.Itoa(j.Epochs),
				jobspec.AnnotationPriority:   strconv.Itoa(j.Priority),
			},
		},
		"spec": map[string]any{
			"slotsPerWorker": max(j.GPUsPerWorker, 1),
			"mpiReplicaSpecs": map[string]any{
				"Launcher": map[string]any{"replicas": 1, "template": template(container("launcher", false))},
				"Worker":   map[string]any{"replicas": j.Requested, "template": template(container("worker", true))},
			},
		},
	}
	return json.Marshal(m)
}

// dnsLabel lowercases s, turns every run of other characters than
// letters and digits into one dash, and cuts it to the length a job's
// name may have (jobspec.DefaultMaxNameLength).
func dnsLabel(s string) string {
	var b strings.Builder
	dash := false
	for _, c := range strings.ToLower(s) {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(c)
			dash = false
			continue
		}
		dash = true
	}
	out := b.String()
	if len(out) > jobspec.DefaultMaxNameLength {
		out = strings.TrimRight(out[:jobspec.DefaultMaxNameLength], "-")
	}
	return out
}
