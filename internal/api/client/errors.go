package client

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strings"

	"github.com/vodascheduler/voda/internal/api"
)

// APIError is a 4xx or 5xx answer of the server.
type APIError struct {
	// StatusCode is the HTTP status.
	StatusCode int
	// Reason is the server's short reason (e.g. "NotFound",
	// "Invalid"), or the HTTP status text when the body was not an
	// api.Error.
	Reason string
	// Field names the offending input, a JSON path into the manifest or
	// request body; empty when no single input is at fault.
	Field string
	// Message is the server's explanation for a person.
	Message string
}

// Error is the message, followed by the offending field when there is
// one and the message does not start with it: "MAX_NP must be at least
// MIN_NP (field spec.mpiReplicaSpecs.Launcher)", but "priority: required".
func (e *APIError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = e.Reason
	}
	if msg == "" {
		msg = fmt.Sprintf("HTTP %d", e.StatusCode)
	}
	if e.Field != "" && !strings.HasPrefix(msg, e.Field+":") {
		msg += " (field " + e.Field + ")"
	}
	return msg
}

// newAPIError reads an error answer: an api.Error when the body is one,
// otherwise the body's text (a proxy's HTML page, a plain-text panic
// message) as the message.
func newAPIError(status int, contentType string, body []byte) *APIError {
	e := &APIError{StatusCode: status, Reason: http.StatusText(status)}
	var wire api.Error
	if json.Unmarshal(body, &wire) == nil && (wire.Error.Message != "" || wire.Error.Reason != "") {
		if wire.Error.Reason != "" {
			e.Reason = string(wire.Error.Reason)
		}
		e.Field = wire.Error.Field
		e.Message = wire.Error.Message
		return e
	}
	if mt, _, _ := mime.ParseMediaType(contentType); mt == "text/html" || len(strings.TrimSpace(string(body))) == 0 {
		// An HTML page says nothing worth a terminal line.
		e.Message = fmt.Sprintf("%s (HTTP %d)", e.Reason, status)
		return e
	}
	e.Message = fmt.Sprintf("%s (HTTP %d)", snippet(body), status)
	return e
}

// ConnectionError is a request that reached no server: nothing listens
// at the address, the name does not resolve, the connection broke.
type ConnectionError struct {
	// Server is the base URL the client was given.
	Server string
	// Err is the transport's error.
	Err error
}

// Error names the server and says how to point the CLI elsewhere.
func (e *ConnectionError) Error() string {
	return fmt.Sprintf("cannot reach the voda server at %s: %v (is `voda server` running? set --server or VODA_SERVER)", e.Server, e.Err)
}

// Unwrap returns the transport's error.
func (e *ConnectionError) Unwrap() error { return e.Err }
