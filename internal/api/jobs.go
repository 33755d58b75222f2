package api

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/vodascheduler/voda/internal/jobname"
	"github.com/vodascheduler/voda/internal/jobspec"
	"github.com/vodascheduler/voda/internal/metrics"
	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/queue"
	"github.com/vodascheduler/voda/internal/store"
)

// maxNameTries bounds the numeric suffixes tried within one second.
const maxNameTries = 10000

// parseManifest checks a manifest's Content-Type (legacy: the original's
// route, which also takes curl's form type), reads it and validates it
// with the server's options.
func (s *Server) parseManifest(w http.ResponseWriter, r *http.Request, legacy bool) (*jobspec.Spec, error) {
	if err := checkManifestType(r, legacy); err != nil {
		return nil, err
	}
	body, err := readBody(w, r)
	if err != nil {
		return nil, err
	}
	spec, err := jobspec.Parse(body, s.spec)
	if err != nil {
		return nil, specError(err)
	}
	return spec, nil
}

// submit stores a validated job under a unique name and notifies its
// scheduler. It returns the stored job.
func (s *Server) submit(r *http.Request, spec *jobspec.Spec) (store.Job, error) {
	job, err := s.create(r.Context(), spec)
	if err != nil {
		return store.Job{}, err
	}
	s.cfg.Metrics.JobsCreated.WithLabelValues(job.Spec.GPUType).Inc()
	s.notify(r.Context(), job.Spec.GPUType, queue.Message{Verb: queue.VerbJob, Job: job.Name})
	s.hub.Kick()
	s.log.Info("job created", "job", job.Name, "gpuType", job.Spec.GPUType,
		"min", job.Spec.MinWorkers, "max", job.Spec.MaxWorkers)
	return job, nil
}

// firstName is the first name a job of spec is tried under (jobname.New).
// Names come from NameClock, not from Clock, which a simulated cluster
// may run ahead of the wall clock: a name tells its user when they
// submitted.
func (s *Server) firstName(spec *jobspec.Spec) string {
	return jobname.New(spec.Name, s.cfg.NameClock.Now())
}

// create stores the job under a unique name: the user's name plus the
// submission time to the second, and -2, -3, ... when that is taken. The
// store's unique key makes this safe across API replicas; s.names only
// saves tries within this one.
func (s *Server) create(ctx context.Context, spec *jobspec.Spec) (store.Job, error) {
	now := s.cfg.Clock.Now()
	base := s.firstName(spec)
	for try := 0; try < maxNameTries; try++ {
		job, err := newJob(spec, s.names.Next(base), now)
		if err != nil {
			return store.Job{}, err
		}
		err = s.cfg.Store.CreateJob(ctx, job)
		if errors.Is(err, store.ErrExists) {
			continue
		}
		if err != nil {
			return store.Job{}, fmt.Errorf("create job %s: %w", job.Name, err)
		}
		return job, nil
	}
	return store.Job{}, fmt.Errorf("create job %s: no free name after %d tries", base, maxNameTries)
}

// newJob is the record of a new job named name, submitted at now.
func newJob(spec *jobspec.Spec, name string, now time.Time) (store.Job, error) {
	spec.Rename(name)
	manifest, err := spec.JSON()
	if err != nil {
		return store.Job{}, err
	}
	js := spec.JobSpec
	js.SubmitTime = now
	return store.Job{
		Name: name, Kind: spec.Kind, Namespace: spec.Namespace, Manifest: manifest, Spec: js, Model: spec.Model,
		Application: spec.Application, ProgressLog: spec.ProgressLog,
		Status: store.JobStatus{
			State:   model.JobState{Status: model.StatusSubmitted},
			Est:     model.Estimates{RemainingSeconds: -1},
			Updated: now,
		},
	}, nil
}

func (s *Server) createJob(w http.ResponseWriter, r *http.Request) error {
	dry, err := dryRun(r)
	if err != nil {
		return err
	}
	spec, err := s.parseManifest(w, r, false)
	if err != nil {
		return err
	}
	if err := s.allow(r, jobAction(r, spec.Kind, spec.Namespace, "")); err != nil {
		return err
	}
	if dry {
		return s.answerDryRun(w, r, spec)
	}
	job, err := s.submit(r, spec)
	if err != nil {
		return err
	}
	w.Header().Set("Location", RouteJobs+"/"+job.Name)
	s.writeWarnedJob(w, r, http.StatusCreated, job, spec.Warnings)
	return nil
}

// dryRunAll is the one value of the dryRun query parameter, as in
// Kubernetes: validate and answer, but store nothing.
const dryRunAll = "All"

// dryRun reads the dryRun query parameter: absent, or All.
func dryRun(r *http.Request) (bool, error) {
	vals, ok := r.URL.Query()["dryRun"]
	switch {
	case !ok:
		return false, nil
	case len(vals) == 1 && vals[0] == dryRunAll:
		return true, nil
	}
	return false, badRequest("dryRun",
		fmt.Sprintf("dryRun: %q is not %s (the only value: validate and store nothing)", strings.Join(vals, ","), dryRunAll))
}

// answerDryRun answers 200 with the job as it would be created now: its
// name without the -2, -3, ... a name taken within the same second gets.
func (s *Server) answerDryRun(w http.ResponseWriter, r *http.Request, spec *jobspec.Spec) error {
	job, err := newJob(spec, s.firstName(spec), s.cfg.Clock.Now())
	if err != nil {
		return err
	}
	s.writeWarnedJob(w, r, http.StatusOK, job, spec.Warnings)
	return nil
}

// listViews lists the jobs opts selects that the caller may see, as the
// API shows them: all of them at once, for the original's job table.
func (s *Server) listViews(r *http.Request, opts store.ListOptions) ([]Job, error) {
	jobs, err := s.cfg.Store.ListJobs(r.Context(), opts)
	if err != nil {
		return nil, err
	}
	if jobs, err = s.visible(r, jobs); err != nil {
		return nil, err
	}
	return s.views(r, jobs)
}

// views are jobs as the API shows them now, each with its GPU type's
// algorithm.
func (s *Server) views(r *http.Request, jobs []store.Job) ([]Job, error) {
	algos, err := s.settings(r.Context())
	if err != nil {
		return nil, err
	}
	now := s.cfg.Clock.Now()
	views := make([]Job, len(jobs))
	for i, j := range jobs {
		views[i] = s.view(j, s.algorithmOf(algos[j.Spec.GPUType]), now)
	}
	return views, nil
}

// lookup loads the job a request names and checks that the caller may
// perform the request's action on it: a 404 error if it is absent, a 403
// if the caller may not.
func (s *Server) lookup(r *http.Request, name string) (store.Job, error) {
	j, err := s.cfg.Store.GetJob(r.Context(), name)
	if errors.Is(err, store.ErrNotFound) {
		return store.Job{}, noJob(name)
	}
	if err != nil {
		return store.Job{}, err
	}
	if err := s.allow(r, jobAction(r, j.Kind, s.namespaceOf(j), j.Name)); err != nil {
		return store.Job{}, err
	}
	return j, nil
}

// namespaceOf is the namespace a job belongs to.
func (s *Server) namespaceOf(j store.Job) string {
	return cmp.Or(j.Namespace, s.cfg.DefaultNamespace, jobspec.DefaultNamespace)
}

func (s *Server) getJob(w http.ResponseWriter, r *http.Request) error {
	j, err := s.lookup(r, r.PathValue("name"))
	if err != nil {
		return err
	}
	s.writeJob(w, r, http.StatusOK, j)
	return nil
}

func (s *Server) writeJob(w http.ResponseWriter, r *http.Request, code int, j store.Job) {
	s.writeWarnedJob(w, r, code, j, nil)
}

// writeWarnedJob answers a submitted manifest's job with the manifest's
// warnings: in Warning headers and in the job's warnings.
func (s *Server) writeWarnedJob(w http.ResponseWriter, r *http.Request, code int, j store.Job, warnings []string) {
	algo := s.cfg.DefaultAlgorithm
	if rec, err := s.cfg.Store.GetScheduler(r.Context(), j.Spec.GPUType); err == nil {
		algo = s.algorithmOf(rec)
	}
	v := s.view(j, algo, s.cfg.Clock.Now())
	v.Warnings = warnings
	addWarnings(w.Header(), warnings)
	writeJSON(w, code, v)
}

// deleteByName deletes a job as kubectl deletes an object. A live job is
// marked for deletion and its scheduler notified, which halts it and
// records it Canceled: the job is returned as it is, with removed false,
// however often it is deleted while it is being halted. A finished job
// (Completed, Failed, Canceled: its deletion asked for before or not) is
// removed from the store: the job returned is its last view, with
// removed true, and the job is then not found.
func (s *Server) deleteByName(r *http.Request, name string) (j store.Job, removed bool, err error) {
	if j, err = s.lookup(r, name); err != nil {
		return store.Job{}, false, err
	}
	if statusOf(j).Done() {
		return j, true, s.removeFinished(r, j)
	}
	if !j.DeleteRequested {
		if err := s.cfg.Store.RequestDelete(r.Context(), name); err != nil {
			return store.Job{}, false, err
		}
		j.DeleteRequested = true
		s.cfg.Metrics.JobsDeleted.WithLabelValues(j.Spec.GPUType).Inc()
		s.log.Info("job deletion requested", "job", name)
	}
	s.notify(r.Context(), j.Spec.GPUType, queue.Message{Verb: queue.VerbJob, Job: name})
	s.hub.Kick()
	return j, false, nil
}

// removeFinished removes the record of j, a finished job. The store
// removes only a record it sees terminal, so a job whose status changed
// since j was read is left alone; no scheduler holds a finished job, so
// none is told.
func (s *Server) removeFinished(r *http.Request, j store.Job) error {
	n, err := s.cfg.Store.DeleteFinished(r.Context(), []string{j.Name})
	if err != nil {
		return err
	}
	if n == 0 {
		// Another request removed it first, or its record cannot be
		// read and its status could not be read as finished: its
		// scheduler sets it aside as Failed at its next resync.
		if _, err := s.cfg.Store.GetJob(r.Context(), j.Name); errors.Is(err, store.ErrNotFound) {
			return noJob(j.Name)
		} else if err != nil {
			return err
		}
		return conflict(fmt.Sprintf(
			"name: job %s cannot be removed yet: its record cannot be read, and its scheduler has not set it aside (it does within a resync); try again then", j.Name))
	}
	s.cfg.Metrics.JobsRemoved.WithLabelValues(metrics.RemovedDeleted).Inc()
	s.log.Info("finished job removed", "job", j.Name, "status", statusOf(j))
	s.hub.Kick()
	return nil
}

// deleteJob answers 202 while a live job is being halted, and 200 with
// the last view of a finished job it removed, as Kubernetes answers a
// deletion that is under way and one that is done.
func (s *Server) deleteJob(w http.ResponseWriter, r *http.Request) error {
	j, removed, err := s.deleteByName(r, r.PathValue("name"))
	if err != nil {
		return err
	}
	code := http.StatusAccepted
	if removed {
		code = http.StatusOK
	}
	s.writeJob(w, r, code, j)
	return nil
}

func (s *Server) setPriority(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	var req PriorityRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	max := jobspec.DefaultMaxPriority
	switch {
	case req.Priority == nil:
		return invalid("priority", "priority: required")
	case *req.Priority < 0 || *req.Priority > max:
		return invalid("priority", fmt.Sprintf("priority: %d is outside [0, %d] (0 is the highest)", *req.Priority, max))
	}
	j, err := s.lookup(r, name)
	if err != nil {
		return err
	}
	if st := statusOf(j); st.Done() {
		return conflict(fmt.Sprintf("name: job %s already finished (%s)", name, st))
	}
	if err := s.cfg.Store.SetPriority(r.Context(), name, *req.Priority); err != nil {
		return err
	}
	j.Spec.Priority = *req.Priority
	s.notify(r.Context(), j.Spec.GPUType, queue.Message{Verb: queue.VerbJob, Job: name})
	s.hub.Kick()
	s.writeJob(w, r, http.StatusOK, j)
	return nil
}

// statusOf is the status a user sees: a record that could not be read
// is Failed.
func statusOf(j store.Job) model.Status {
	if j.Unreadable != "" {
		return model.StatusFailed
	}
	if st := j.Status.State.Status; st != "" {
		return st
	}
	return model.StatusSubmitted
}

// view turns a stored job into its API form as of now.
func (s *Server) view(j store.Job, algo string, now time.Time) Job {
	st := j.Status.State
	g := j.Spec.PerWorker()
	out := Job{
		Name: j.Name, Namespace: s.namespaceOf(j), Kind: j.Kind, GPUType: j.Spec.GPUType,
		Status: Status(statusOf(j)), DeleteRequested: j.DeleteRequested,
		Workers: st.GPUs / g, GPUsPerWorker: g, GPUs: st.GPUs, MinWorkers: j.Spec.MinWorkers, MaxWorkers: j.Spec.MaxWorkers,
		RequestedWorkers: j.Spec.RequestedWorkers, Priority: j.Spec.Priority, Epochs: j.Spec.Epochs,
		Application: j.Application, ProgressLog: j.ProgressLog,
		Scheduler: algo, SubmitTime: j.Spec.SubmitTime,
		AttainedService: st.AttainedService, Restarts: st.Restarts, PriorityQueue: st.Queue,
		Progress: j.Status.Progress, QueuePosition: j.Status.QueuePosition,
		Reason: j.Status.Reason, Message: j.Status.Message,
	}
	if j.Unreadable != "" {
		out.Reason, out.Message = store.ReasonUnreadable, j.Unreadable
	}
	out.Placement = placementMap(st.Placement)
	for _, a := range j.Status.Allocations {
		w := a.Placement.Workers()
		out.Allocations = append(out.Allocations, Allocation{Time: a.At, Workers: w, GPUs: w * g, Placement: placementMap(a.Placement)})
	}
	out.FirstStart = timePtr(st.FirstStart)
	out.FinishTime = timePtr(j.Status.FinishTime)
	// The estimate was made at the scheduler's last cycle; once its time
	// has passed with the job still waiting, the job is expected at the
	// next cycle: now, never in the past.
	if es := j.Status.EstimatedStart; !es.IsZero() && es.Before(now) && st.GPUs == 0 && !statusOf(j).Done() {
		out.EstimatedStart = &now
	} else {
		out.EstimatedStart = timePtr(es)
	}
	if rem := j.Status.Est.RemainingSeconds; rem >= 0 && !statusOf(j).Done() {
		out.RemainingSeconds = &rem
	}
	if len(j.Status.Est.Speedup) > 1 {
		out.Speedup = j.Status.Est.Speedup
	}
	s.measured(&out, j, now)
	end := now
	if !j.Status.FinishTime.IsZero() {
		end = j.Status.FinishTime
	}
	total := 0.0
	if !j.Spec.SubmitTime.IsZero() { // an unreadable record has none
		total = max(end.Sub(j.Spec.SubmitTime).Seconds(), 0)
	}
	running := st.RunSeconds
	if st.GPUs > 0 && j.Status.FinishTime.IsZero() && now.After(j.Status.Updated) {
		running += now.Sub(j.Status.Updated).Seconds()
	}
	running = min(running, total)
	out.TotalSeconds, out.RunningSeconds, out.WaitingSeconds = total, running, total-running
	out.AsOf = now
	return out
}

// placementMap maps node name to workers there; nil for no placement.
func placementMap(p model.JobPlacement) map[string]int {
	if len(p) == 0 {
		return nil
	}
	m := make(map[string]int, len(p))
	for _, nw := range p {
		m[nw.Node] += nw.Workers
	}
	return m
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
