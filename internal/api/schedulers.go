package api

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/vodascheduler/voda/internal/queue"
	"github.com/vodascheduler/voda/internal/store"
)

func (s *Server) schedulerView(rec store.Scheduler) Scheduler {
	st := rec.Status
	out := Scheduler{
		GPUType: rec.GPUType, Algorithm: s.algorithmOf(rec), Params: rec.Settings.Params,
		Now: timePtr(st.Now), LastCycle: timePtr(st.LastCycle), Cycles: st.Cycles,
		Nodes: st.Nodes, GPUs: st.GPUs, GPUsInUse: st.GPUsInUse, Waiting: st.Waiting, Running: st.Running,
	}
	switch rl := rec.Settings.RateLimit; {
	case rl < 0:
		out.RateLimitSeconds = 0
	case rl == 0:
		out.RateLimitSeconds = s.cfg.DefaultRateLimit.Seconds()
	default:
		out.RateLimitSeconds = rl.Seconds()
	}
	return out
}

// scheduler loads a known GPU type's record (an empty one if none was
// written yet), answering 404 for unknown types.
func (s *Server) scheduler(w http.ResponseWriter, r *http.Request, gpuType string) (store.Scheduler, bool) {
	if !s.knownGPUType(gpuType) {
		s.fail(w, http.StatusNotFound, "NotFound", "gpuType",
			fmt.Sprintf("gpuType: no scheduler for %q (known: %s)", gpuType, strings.Join(s.cfg.GPUTypes, ", ")))
		return store.Scheduler{}, false
	}
	rec, err := s.cfg.Store.GetScheduler(r.Context(), gpuType)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return store.Scheduler{GPUType: gpuType}, true
	case err != nil:
		s.failInternal(w, r, err)
		return store.Scheduler{}, false
	}
	return rec, true
}

func (s *Server) listSchedulers(w http.ResponseWriter, r *http.Request) {
	recs, err := s.settings(r.Context())
	if err != nil {
		s.failInternal(w, r, err)
		return
	}
	out := SchedulerList{Items: []Scheduler{}}
	for _, t := range s.cfg.GPUTypes {
		rec := recs[t]
		rec.GPUType = t
		out.Items = append(out.Items, s.schedulerView(rec))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) getScheduler(w http.ResponseWriter, r *http.Request) {
	rec, ok := s.scheduler(w, r, r.PathValue("gpuType"))
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, s.schedulerView(rec))
}

// changeAlgorithm validates and stores a GPU type's algorithm, then tells
// its scheduler. It writes the error answer itself.
func (s *Server) changeAlgorithm(w http.ResponseWriter, r *http.Request, gpuType string, req AlgorithmRequest) (store.Scheduler, bool) {
	rec, ok := s.scheduler(w, r, gpuType)
	if !ok {
		return rec, false
	}
	name := strings.TrimSpace(req.Algorithm)
	e, found := s.cfg.Algorithms.Lookup(name)
	if !found {
		s.fail(w, http.StatusBadRequest, "Invalid", "algorithm",
			fmt.Sprintf("algorithm: unknown algorithm %q (known: %s)", req.Algorithm, strings.Join(s.cfg.Algorithms.Names(), ", ")))
		return rec, false
	}
	if _, err := s.cfg.Algorithms.NewFromMap(e.Name, req.Params); err != nil {
		s.fail(w, http.StatusBadRequest, "Invalid", "params", "params: "+err.Error())
		return rec, false
	}
	rec.Settings.Algorithm, rec.Settings.Params = e.Name, req.Params
	return rec, s.putSettings(w, r, rec)
}

// changeRateLimit validates and stores a GPU type's rate limit; 0 turns
// it off.
func (s *Server) changeRateLimit(w http.ResponseWriter, r *http.Request, gpuType string, seconds *float64) (store.Scheduler, bool) {
	rec, ok := s.scheduler(w, r, gpuType)
	if !ok {
		return rec, false
	}
	switch {
	case seconds == nil:
		s.fail(w, http.StatusBadRequest, "Invalid", "seconds", "seconds: required")
		return rec, false
	case math.IsNaN(*seconds) || *seconds < 0 || *seconds > MaxRateLimitSeconds:
		s.fail(w, http.StatusBadRequest, "Invalid", "seconds",
			fmt.Sprintf("seconds: %v is outside [0, %d] (0 turns the rate limit off)", *seconds, MaxRateLimitSeconds))
		return rec, false
	}
	rec.Settings.RateLimit = time.Duration(*seconds * float64(time.Second))
	if rec.Settings.RateLimit == 0 {
		rec.Settings.RateLimit = -1 // stored zero means "default"
	}
	return rec, s.putSettings(w, r, rec)
}

func (s *Server) putSettings(w http.ResponseWriter, r *http.Request, rec store.Scheduler) bool {
	if err := s.cfg.Store.PutSettings(r.Context(), rec.GPUType, rec.Settings); err != nil {
		s.failInternal(w, r, err)
		return false
	}
	s.notify(context.WithoutCancel(r.Context()), rec.GPUType, queue.Message{Verb: queue.VerbSettings})
	s.hub.Kick()
	s.log.Info("scheduler settings changed", "gpuType", rec.GPUType, "algorithm", rec.Settings.Algorithm, "rateLimit", rec.Settings.RateLimit)
	return true
}

func (s *Server) setAlgorithm(w http.ResponseWriter, r *http.Request) {
	var req AlgorithmRequest
	if !s.decodeJSON(w, r, &req) {
		return
	}
	rec, ok := s.changeAlgorithm(w, r, r.PathValue("gpuType"), req)
	if ok {
		writeJSON(w, http.StatusOK, s.schedulerView(rec))
	}
}

func (s *Server) setRateLimit(w http.ResponseWriter, r *http.Request) {
	var req RateLimitRequest
	if !s.decodeJSON(w, r, &req) {
		return
	}
	rec, ok := s.changeRateLimit(w, r, r.PathValue("gpuType"), req.Seconds)
	if ok {
		writeJSON(w, http.StatusOK, s.schedulerView(rec))
	}
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
