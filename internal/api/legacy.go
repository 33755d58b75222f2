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

func (s *Server) legacyCreate(w http.ResponseWriter, r *http.Request) error {
	spec, err := s.parseManifest(w, r, true)
	if err != nil {
		return err
	}
	if err := s.allow(r, jobAction(r, spec.Kind, spec.Namespace, "")); err != nil {
		return err
	}
	job, err := s.submit(r, spec)
	if err != nil {
		return err
	}
	addWarnings(w.Header(), spec.Warnings) // the original's text answer stays as it was
	writeText(w, http.StatusCreated, fmt.Sprintf("Training job created: %s\n", job.Name))
	return nil
}

func (s *Server) legacyDelete(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(w, r)
	if err != nil {
		return err
	}
	name := legacyText(body)
	if name == "" {
		return invalid("body", "body: the name of the job to delete is required")
	}
	if _, _, err := s.deleteByName(r, name); err != nil {
		return err
	}
	writeText(w, http.StatusOK, fmt.Sprintf("Training job deleted: %s\n", name))
	return nil
}

// legacyList prints the original's job table.
func (s *Server) legacyList(w http.ResponseWriter, r *http.Request) error {
	views, err := s.listViews(r, store.ListOptions{GPUType: r.URL.Query().Get("gpuType")})
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTATUS\tWORKERS\tSCHEDULER\tWAITING\tRUNNING\tTOTAL")
	for _, v := range views {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%ds\t%ds\t%ds\n", v.Name, v.Status, v.Workers, v.Scheduler,
			int64(math.Round(v.WaitingSeconds)), int64(math.Round(v.RunningSeconds)), int64(math.Round(v.TotalSeconds)))
	}
	_ = tw.Flush() // writes to a buffer
	writeText(w, http.StatusOK, buf.String())
	return nil
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

// legacySetting reads a legacy settings request: the GPU type, from the
// gpuType query parameter or the only GPU type there is, then the body's
// text.
func (s *Server) legacySetting(w http.ResponseWriter, r *http.Request) (gpuType, text string, err error) {
	if gpuType = r.URL.Query().Get("gpuType"); gpuType == "" {
		if len(s.cfg.GPUTypes) != 1 {
			return "", "", invalid("gpuType",
				fmt.Sprintf("gpuType: required with more than one GPU type (known: %s)", strings.Join(s.cfg.GPUTypes, ", ")))
		}
		gpuType = s.cfg.GPUTypes[0]
	}
	body, err := readBody(w, r)
	return gpuType, legacyText(body), err
}

func (s *Server) legacyAlgorithm(w http.ResponseWriter, r *http.Request) error {
	gpuType, text, err := s.legacySetting(w, r)
	if err != nil {
		return err
	}
	rec, err := s.changeAlgorithm(r, gpuType, AlgorithmRequest{Algorithm: text})
	if err != nil {
		return err
	}
	writeText(w, http.StatusOK, fmt.Sprintf("Algorithm of %s set to %s\n", gpuType, rec.Settings.Algorithm))
	return nil
}

func (s *Server) legacyRateLimit(w http.ResponseWriter, r *http.Request) error {
	gpuType, text, err := s.legacySetting(w, r)
	if err != nil {
		return err
	}
	secs, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return invalid("body", fmt.Sprintf("body: %q is not a number of seconds", text))
	}
	if _, err := s.changeRateLimit(r, gpuType, &secs); err != nil {
		return err
	}
	writeText(w, http.StatusOK, fmt.Sprintf("Rate limit of %s set to %gs\n", gpuType, secs))
	return nil
}
