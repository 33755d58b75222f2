package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/vodascheduler/voda/internal/jobspec"
)

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v) // the client went away; nothing left to tell it
}

func writeText(w http.ResponseWriter, code int, text string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, text)
}

// fail answers with an Error body.
func (s *Server) fail(w http.ResponseWriter, code int, reason, field, msg string) {
	writeJSON(w, code, Error{Error: ErrorDetail{Code: code, Reason: reason, Field: field, Message: msg}})
}

// failInternal logs err and answers 500 without leaking internals.
func (s *Server) failInternal(w http.ResponseWriter, r *http.Request, err error) {
	s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	s.fail(w, http.StatusInternalServerError, "InternalError", "", "the server could not complete the request; see its log")
}

// failSpec answers a manifest the parser rejected.
func (s *Server) failSpec(w http.ResponseWriter, r *http.Request, err error) {
	var fe *jobspec.FieldError
	if errors.As(err, &fe) {
		s.fail(w, http.StatusBadRequest, "Invalid", fe.Field, fe.Error())
		return
	}
	s.failInternal(w, r, err)
}

// maxBody bounds every request body: jobspec's limit on manifests.
const maxBody = jobspec.DefaultMaxBytes

// readBody reads a request body up to maxBody, answering 413 beyond it.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		s.fail(w, http.StatusRequestEntityTooLarge, "TooLarge", "body", fmt.Sprintf("body: larger than %d bytes", maxBody))
		return nil, false
	case err != nil:
		s.fail(w, http.StatusBadRequest, "BadRequest", "body", fmt.Sprintf("body: %v", err))
		return nil, false
	}
	return body, true
}

// manifestTypes are the Content-Types a manifest may come with; the body
// is sniffed either way (YAML is a superset of JSON).
var manifestTypes = map[string]bool{
	"": true, "application/json": true, "application/yaml": true, "application/x-yaml": true,
	"text/yaml": true, "text/x-yaml": true, "text/plain": true, "application/octet-stream": true,
}

func (s *Server) checkManifestType(w http.ResponseWriter, r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || !manifestTypes[mt] {
		s.fail(w, http.StatusUnsupportedMediaType, "UnsupportedMediaType", "Content-Type",
			fmt.Sprintf("Content-Type: %q is not a manifest type; send application/yaml or application/json", ct))
		return false
	}
	return true
}

// decodeJSON decodes a small JSON request body strictly.
func (s *Server) decodeJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	body, ok := s.readBody(w, r)
	if !ok {
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		s.fail(w, http.StatusBadRequest, "BadRequest", "body", fmt.Sprintf("body: not the expected JSON object: %v", err))
		return false
	}
	if dec.More() {
		s.fail(w, http.StatusBadRequest, "BadRequest", "body", "body: trailing data after the JSON object")
		return false
	}
	return true
}
