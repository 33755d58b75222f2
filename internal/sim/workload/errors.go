package workload

import (
	"errors"
	"fmt"
)

// ErrNoJobs is returned (inside a LineError) when a workload has a header
// but no job rows. A simulation of nothing is almost always a mistake, such
// as the wrong file.
var ErrNoJobs = errors.New("no jobs after the header")

// LineError reports bad input at one line of a workload file, and the field
// (column) when one is to blame. Its text is "line N: field F: reason", or
// "line N: reason" without a field. Read adds the file path in front.
type LineError struct {
	// Line is 1-based and counts every line of the input, comments and
	// blank lines included, so an editor can jump to it.
	Line int
	// Field is the column name, or "" when the whole line is at fault.
	Field string
	// Err is the reason.
	Err error
}

// Error implements error.
func (e *LineError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("line %d: %v", e.Line, e.Err)
	}
	return fmt.Sprintf("line %d: field %s: %v", e.Line, e.Field, e.Err)
}

// Unwrap returns the reason, so errors.Is(err, ErrNoJobs) works.
func (e *LineError) Unwrap() error { return e.Err }

func lineErr(line int, field, format string, args ...any) *LineError {
	return &LineError{Line: line, Field: field, Err: fmt.Errorf(format, args...)}
}
