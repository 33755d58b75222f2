package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/vodascheduler/voda/internal/store"
)

// The original Voda's routes, kept for its users and scripts. They take
// and give plain text like the original, but answer errors with proper
// status codes and the same JSON error body as the v1 API.

func (s *Server) legacyCreate(w http.ResponseWriter, r *http.Request) {
	spec, ok := s.parseManifest(w, r, true)
	if !ok {
		return
	}
	job, ok := s.submit(w, r, spec)
	if !ok {
		return
	}
	writeText(w, http.StatusCreated, fmt.Sprintf("Training job created: %s\n", job.Name))
}

func (s *Server) legacyDelete(w http.ResponseWriter, r *http.Request) {
	body, ok := s.readBody(w, r)
	if !ok {
		return
	}
	name := legacyText(body)
	if name == "" {
		s.fail(w, http.StatusBadRequest, "Invalid", "body", "body: the name of the job to delete is required")
		return
	}
	if _, ok := s.requestDelete(w, r, name); ok {
		writeText(w, http.StatusOK, fmt.Sprintf("Training job deleted: %s\n", name))
	}
}

// legacyList prints the original's job table.
func (s *Server) legacyList(w http.ResponseWriter, r *http.Request) {
	opts := store.ListOptions{GPUType: r.URL.Query().Get("gpuType")}
	jobs, err := s.cfg.Store.ListJobs(r.Context(), opts)
	if err != nil {
		s.failInternal(w, r, err)
		return
	}
	algos, err := s.settings(r.Context())
	if err != nil {
		s.failInternal(w, r, err)
		return
	}
	now := s.cfg.Clock.Now()
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTATUS\tWORKERS\tSCHEDULER\tWAITING\tRUNNING\tTOTAL")
	for _, j := range jobs {
		v := s.view(j, s.algorithmOf(algos[j.Spec.GPUType]), now)
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%ds\t%ds\t%ds\n", v.Name, v.Status, v.Workers, v.Scheduler,
			int64(math.Round(v.WaitingSeconds)), int64(math.Round(v.RunningSeconds)), int64(math.Round(v.TotalSeconds)))
	}
	_ = tw.Flush() // writes to a buffer
	writeText(w, http.StatusOK, buf.String())
}

// legacyText is a legacy body's text: raw text as the original's CLI
// sends it (a job name, an algorithm, seconds), or a JSON string as its
// documentation's curl calls send it ('"ElasticFIFO"'), unquoted.
func legacyText(body []byte) string {
	text := strings.TrimSpace(string(body))
	if strings.HasPrefix(text, `"`) {
		var s string
		if json.Unmarshal([]byte(text), &s) == nil {
			return strings.TrimSpace(s)
		}
	}
	return text
}

// legacyGPUType picks the GPU type of a legacy settings request: the
// gpuType query parameter, or the only GPU type there is.
func (s *Server) legacyGPUType(w http.ResponseWriter, r *http.Request) (string, bool) {
	if t := r.URL.Query().Get("gpuType"); t != "" {
		return t, true
	}
	if len(s.cfg.GPUTypes) == 1 {
		return s.cfg.GPUTypes[0], true
	}
	s.fail(w, http.StatusBadRequest, "Invalid", "gpuType",
		fmt.Sprintf("gpuType: required with more than one GPU type (known: %s)", strings.Join(s.cfg.GPUTypes, ", ")))
	return "", false
}

func (s *Server) legacyAlgorithm(w http.ResponseWriter, r *http.Request) {
	gpuType, ok := s.legacyGPUType(w, r)
	if !ok {
		return
	}
	body, ok := s.readBody(w, r)
	if !ok {
		return
	}
	rec, ok := s.changeAlgorithm(w, r, gpuType, AlgorithmRequest{Algorithm: legacyText(body)})
	if ok {
		writeText(w, http.StatusOK, fmt.Sprintf("Algorithm of %s set to %s\n", gpuType, rec.Settings.Algorithm))
	}
}

func (s *Server) legacyRateLimit(w http.ResponseWriter, r *http.Request) {
	gpuType, ok := s.legacyGPUType(w, r)
	if !ok {
		return
	}
	body, ok := s.readBody(w, r)
	if !ok {
		return
	}
	text := legacyText(body)
	secs, err := strconv.ParseFloat(text, 64)
	if err != nil {
		s.fail(w, http.StatusBadRequest, "Invalid", "body", fmt.Sprintf("body: %q is not a number of seconds", text))
		return
	}
	if _, ok := s.changeRateLimit(w, r, gpuType, &secs); ok {
		writeText(w, http.StatusOK, fmt.Sprintf("Rate limit of %s set to %gs\n", gpuType, secs))
	}
}
