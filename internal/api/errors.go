package api

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/vodascheduler/voda/internal/auth"
	"github.com/vodascheduler/voda/internal/jobspec"
)

// Reason is the one-word cause of an error answer (ErrorDetail.Reason),
// named as Kubernetes names its StatusReasons where one fits. Clients
// match on it, so each cause has one spelling: docs/api.md lists them
// all (TestReasonsDocumented).
type Reason string

// The reasons the API answers with, and the status each goes with.
const (
	// ReasonBadRequest (400): a body, query parameter or JSON field that
	// cannot be read as the route expects.
	ReasonBadRequest Reason = "BadRequest"
	// ReasonInvalid (400): a manifest or value that breaks a rule.
	ReasonInvalid Reason = "Invalid"
	// ReasonUnauthorized (401): no bearer token, or one not valid.
	ReasonUnauthorized Reason = "Unauthorized"
	// ReasonForbidden (403): the Authorizer refused, or could not be asked.
	ReasonForbidden Reason = "Forbidden"
	// ReasonUnknownHost (403): a Host that is not a loopback name, on a
	// server listening on loopback.
	ReasonUnknownHost Reason = "UnknownHost"
	// ReasonCrossOrigin (403): a change from another origin's page.
	ReasonCrossOrigin Reason = "CrossOrigin"
	// ReasonBrowserRequest (403): a browser's change to an original route
	// that is not JSON or YAML.
	ReasonBrowserRequest Reason = "BrowserRequest"
	// ReasonNotFound (404): no such job, GPU type or route.
	ReasonNotFound Reason = "NotFound"
	// ReasonMethodNotAllowed (405): the path's routes take other methods.
	ReasonMethodNotAllowed Reason = "MethodNotAllowed"
	// ReasonConflict (409): the job's state does not allow the change.
	ReasonConflict Reason = "Conflict"
	// ReasonExpired (410): a continue token too old, or of another
	// version of the server.
	ReasonExpired Reason = "Expired"
	// ReasonRequestEntityTooLarge (413): a body over the route's limit.
	ReasonRequestEntityTooLarge Reason = "RequestEntityTooLarge"
	// ReasonUnsupportedMediaType (415): a Content-Type the route does not
	// take.
	ReasonUnsupportedMediaType Reason = "UnsupportedMediaType"
	// ReasonTooManyRequests (429): try again after Retry-After.
	ReasonTooManyRequests Reason = "TooManyRequests"
	// ReasonInternalError (500): the server failed; its log says why.
	ReasonInternalError Reason = "InternalError"
	// ReasonServiceUnavailable (503): no room now; try again after
	// Retry-After.
	ReasonServiceUnavailable Reason = "ServiceUnavailable"
)

// Reasons are every Reason, for the documentation's test.
var Reasons = []Reason{
	ReasonBadRequest, ReasonInvalid, ReasonUnauthorized, ReasonForbidden, ReasonUnknownHost,
	ReasonCrossOrigin, ReasonBrowserRequest, ReasonNotFound, ReasonMethodNotAllowed, ReasonConflict,
	ReasonExpired, ReasonRequestEntityTooLarge, ReasonUnsupportedMediaType, ReasonTooManyRequests,
	ReasonInternalError, ReasonServiceUnavailable,
}

// httpError is an error answer: the helpers and handlers return it, and
// writeError alone writes it. Any other error is a 500 that writeError
// logs.
type httpError struct {
	status  int
	reason  Reason
	field   string
	message string
	// warnings go out as Warning headers and in the body (a manifest's).
	warnings []string
	// header is set on the answer (Retry-After, Allow, WWW-Authenticate).
	header http.Header
}

func (e *httpError) Error() string { return e.message }

// newError is an error answer whose message is msg.
func newError(status int, reason Reason, field, msg string) *httpError {
	return &httpError{status: status, reason: reason, field: field, message: msg}
}

// with sets a header on the answer.
func (e *httpError) with(key, value string) *httpError {
	if e.header == nil {
		e.header = http.Header{}
	}
	e.header.Set(key, value)
	return e
}

// Shorthands for the answers many routes give.
func badRequest(field, msg string) *httpError {
	return newError(http.StatusBadRequest, ReasonBadRequest, field, msg)
}

func invalid(field, msg string) *httpError {
	return newError(http.StatusBadRequest, ReasonInvalid, field, msg)
}

func noJob(name string) *httpError {
	return newError(http.StatusNotFound, ReasonNotFound, "name", fmt.Sprintf("name: no job %q", name))
}

func conflict(msg string) *httpError {
	return newError(http.StatusConflict, ReasonConflict, "name", msg)
}

// tooLarge is the answer to a body over maxBody.
func tooLarge() *httpError {
	return newError(http.StatusRequestEntityTooLarge, ReasonRequestEntityTooLarge, "body",
		fmt.Sprintf("body: larger than %d bytes", maxBody))
}

// specError is the answer to a manifest the parser rejected, with its
// warnings; an error that is no jobspec.FieldError stays a 500.
func specError(err error) error {
	var fe *jobspec.FieldError
	if errors.As(err, &fe) {
		e := invalid(fe.Field, fe.Error())
		e.warnings = fe.Warnings
		return e
	}
	return err
}

// errInternal is what a 500 tells the client: nothing of the cause.
const errInternal = "the server could not complete the request; see its log"

// writeError answers err: an httpError as it says, anything else as a
// 500 after logging it with the request.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var e *httpError
	if !errors.As(err, &e) {
		args := []any{"method", r.Method, "path", r.URL.Path, "err", err}
		if u, ok := auth.UserFrom(r.Context()); ok {
			args = append(args, "user", u.Name)
		}
		s.log.Error("request failed", args...)
		e = newError(http.StatusInternalServerError, ReasonInternalError, "", errInternal)
	}
	h := w.Header()
	for k, vs := range e.header {
		h[k] = vs
	}
	addWarnings(h, e.warnings)
	writeJSON(w, e.status, Error{Error: ErrorDetail{Code: e.status, Reason: e.reason, Field: e.field,
		Message: e.message, Warnings: e.warnings}})
}

// handlerFunc is a route's handler: it writes its answer on success, and
// returns any error for writeError to answer.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// handle makes h an http.HandlerFunc that answers h's error.
func (s *Server) handle(h handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			s.writeError(w, r, err)
		}
	}
}
