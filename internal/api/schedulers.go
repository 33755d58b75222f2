package api

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/queue"
	"github.com/vodascheduler/voda/internal/store"
)

func (s *Server) schedulerView(rec store.Scheduler) Scheduler {
	st := rec.Status
	out := Scheduler{
		GPUType: rec.GPUType, Algorithm: s.algorithmOf(rec), Params: rec.Settings.Params,
		LastCycle: timePtr(st.LastCycle), Cycles: st.Cycles,
		Nodes: st.Nodes, GPUs: st.GPUs, GPUsInUse: st.GPUsInUse, Waiting: st.Waiting, Running: st.Running,
	}
	// The status holds the time it was written, after the last cycle or
	// node change: an idle scheduler's is minutes old, hours of a
	// simulated cluster's clock. Its time is the clock's now.
	if !st.Now.IsZero() {
		out.Now = timePtr(s.cfg.Clock.Now())
	}
	switch rl := rec.Settings.RateLimit; {
	case rl < 0:
		out.RateLimitSeconds = 0
	case rl == 0:
		out.RateLimitSeconds = s.cfg.DefaultRateLimit.Seconds()
	default:
		out.RateLimitSeconds = rl.Seconds()
	}
	out.Teams = teamsView(rec)
	return out
}

// teamsView merges a GPU type's quotas with its teams' shares at the last
// cycle: every team with a quota or live jobs, sorted by name.
func teamsView(rec store.Scheduler) []Team {
	byName := map[string]*Team{}
	get := func(name string) *Team {
		t := byName[name]
		if t == nil {
			d := model.DefaultQuota
			t = &Team{Team: name, Guarantee: d.Guarantee, Limit: d.Limit, Weight: d.Weight}
			byName[name] = t
		}
		return t
	}
	for _, q := range rec.Settings.Quotas {
		t := get(q.Team)
		t.Quota, t.Guarantee, t.Limit, t.Weight = true, q.Guarantee, q.Limit, q.Weight
	}
	for _, ts := range rec.Status.Teams {
		t := get(ts.Team)
		t.GPUsInUse, t.Entitled, t.Demand, t.Running, t.Waiting = ts.GPUs, ts.Entitled, ts.Demand, ts.Running, ts.Waiting
	}
	if len(byName) == 0 {
		return nil
	}
	out := make([]Team, 0, len(byName))
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		out = append(out, *byName[name])
	}
	return out
}

// scheduler loads a known GPU type's record (an empty one if none was
// written yet): a 404 error for unknown types.
func (s *Server) scheduler(r *http.Request, gpuType string) (store.Scheduler, error) {
	if !s.knownGPUType(gpuType) {
		return store.Scheduler{}, newError(http.StatusNotFound, ReasonNotFound, "gpuType",
			fmt.Sprintf("gpuType: no scheduler for %q (known: %s)", gpuType, strings.Join(s.cfg.GPUTypes, ", ")))
	}
	rec, err := s.cfg.Store.GetScheduler(r.Context(), gpuType)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return store.Scheduler{GPUType: gpuType}, nil
	case err != nil:
		return store.Scheduler{}, err
	}
	return rec, nil
}

func (s *Server) listSchedulers(w http.ResponseWriter, r *http.Request) error {
	recs, err := s.settings(r.Context())
	if err != nil {
		return err
	}
	out := SchedulerList{Items: []Scheduler{}}
	for _, t := range s.cfg.GPUTypes {
		rec := recs[t]
		rec.GPUType = t
		out.Items = append(out.Items, s.schedulerView(rec))
	}
	if !s.showsTeams(r) {
		for i := range out.Items {
			out.Items[i].Teams = nil
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) getScheduler(w http.ResponseWriter, r *http.Request) error {
	rec, err := s.scheduler(r, r.PathValue("gpuType"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, s.callerView(r, rec))
	return nil
}

// changeAlgorithm validates and stores a GPU type's algorithm, then tells
// its scheduler.
func (s *Server) changeAlgorithm(r *http.Request, gpuType string, req AlgorithmRequest) (store.Scheduler, error) {
	return s.updateSettings(r, gpuType, func(rec *store.Scheduler) error {
		name := strings.TrimSpace(req.Algorithm)
		e, found := s.cfg.Algorithms.Lookup(name)
		if !found {
			return invalid("algorithm",
				fmt.Sprintf("algorithm: unknown algorithm %q (known: %s)", req.Algorithm, strings.Join(s.cfg.Algorithms.Names(), ", ")))
		}
		if _, err := s.cfg.Algorithms.NewFromMap(e.Name, req.Params); err != nil {
			return invalid("params", "params: "+err.Error())
		}
		rec.Settings.Algorithm, rec.Settings.Params = e.Name, req.Params
		return nil
	})
}

// changeRateLimit validates and stores a GPU type's rate limit; 0 turns
// it off.
func (s *Server) changeRateLimit(r *http.Request, gpuType string, seconds *float64) (store.Scheduler, error) {
	return s.updateSettings(r, gpuType, func(rec *store.Scheduler) error {
		switch {
		case seconds == nil:
			return invalid("seconds", "seconds: required")
		case math.IsNaN(*seconds) || *seconds < 0 || *seconds > MaxRateLimitSeconds:
			return invalid("seconds",
				fmt.Sprintf("seconds: %v is outside [0, %d] (0 turns the rate limit off)", *seconds, MaxRateLimitSeconds))
		}
		rec.Settings.RateLimit = time.Duration(*seconds * float64(time.Second))
		if rec.Settings.RateLimit == 0 {
			rec.Settings.RateLimit = -1 // stored zero means "default"
		}
		return nil
	})
}

// updateSettings reads a GPU type's settings, lets change modify them,
// stores them and tells the scheduler. The store has no revision of the
// settings to write against, so the read, change and write hold the
// server's settings lock: two changes through this process (an algorithm
// and a quota, two quotas) never lose each other. Replicas of the API do
// not share the lock; their concurrent changes of one GPU type's settings
// can still lose one (docs/api.md). An error of change is returned as
// it is, and nothing is stored.
func (s *Server) updateSettings(r *http.Request, gpuType string, change func(*store.Scheduler) error) (store.Scheduler, error) {
	s.settingsMu.Lock()
	defer s.settingsMu.Unlock()
	rec, err := s.scheduler(r, gpuType)
	if err != nil {
		return rec, err
	}
	if err := change(&rec); err != nil {
		return rec, err
	}
	if err := s.cfg.Store.PutSettings(r.Context(), rec.GPUType, rec.Settings); err != nil {
		return rec, err
	}
	s.notify(context.WithoutCancel(r.Context()), rec.GPUType, queue.Message{Verb: queue.VerbSettings})
	s.hub.Kick()
	s.log.Info("scheduler settings changed", "gpuType", rec.GPUType, "algorithm", rec.Settings.Algorithm,
		"rateLimit", rec.Settings.RateLimit, "quotas", len(rec.Settings.Quotas))
	return rec, nil
}

func (s *Server) setAlgorithm(w http.ResponseWriter, r *http.Request) error {
	var req AlgorithmRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	rec, err := s.changeAlgorithm(r, r.PathValue("gpuType"), req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, s.callerView(r, rec))
	return nil
}

func (s *Server) setRateLimit(w http.ResponseWriter, r *http.Request) error {
	var req RateLimitRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	rec, err := s.changeRateLimit(r, r.PathValue("gpuType"), req.Seconds)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, s.callerView(r, rec))
	return nil
}

func (s *Server) listAlgorithms(w http.ResponseWriter, _ *http.Request) {
	out := AlgorithmList{Items: []Algorithm{}}
	for _, name := range s.cfg.Algorithms.Names() {
		e, _ := s.cfg.Algorithms.Lookup(name)
		a := Algorithm{Name: e.Name, Summary: e.Summary}
		for _, p := range e.Params {
			a.Params = append(a.Params, p.Name)
		}
		out.Items = append(out.Items, a)
	}
	writeJSON(w, http.StatusOK, out)
}
