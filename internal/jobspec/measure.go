package jobspec

import (
	"fmt"
	"regexp"
	"slices"
)

// Annotations about how Voda measures a job (docs/progress.md). They are
// read from metadata.annotations only.
const (
	// AnnotationApplication names what the job trains, so that jobs of one
	// application share what they measured (the original Voda's job
	// category). Absent, the application is the job's name as submitted.
	AnnotationApplication = "vodascheduler/application"
	// AnnotationProgressLog is a regular expression (RE2 syntax) that finds
	// the job's progress in its launcher's log, for a job whose code cannot
	// report: the named group "epoch" captures the epoch reached (a number,
	// maybe fractional) and the optional group "total" the epochs in all.
	// The last matching line counts.
	AnnotationProgressLog = "vodascheduler/progress-log"
)

// MaxProgressLogLength bounds AnnotationProgressLog. Go's regular
// expressions run in time linear in their input, so a pattern cannot make
// a log slow to search; the bound keeps the compiled program small.
const MaxProgressLogLength = 512

// Capture groups of AnnotationProgressLog.
const (
	LogGroupEpoch = "epoch"
	LogGroupTotal = "total"
)

// CompileProgressLog compiles an AnnotationProgressLog pattern, or returns
// why it is not one: too long, not RE2, without the group "epoch", or with
// a named group other than "epoch" and "total" (a misspelt group would
// otherwise never match anything).
func CompileProgressLog(pattern string) (*regexp.Regexp, string) {
	if pattern == "" {
		return nil, "must not be empty"
	}
	if len(pattern) > MaxProgressLogLength {
		return nil, fmt.Sprintf("is %d bytes; at most %d are accepted", len(pattern), MaxProgressLogLength)
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, fmt.Sprintf("is not a regular expression (RE2 syntax): %v", err)
	}
	names := re.SubexpNames()
	if !slices.Contains(names, LogGroupEpoch) {
		return nil, fmt.Sprintf(`needs a named group (?P<%s>...) that captures the epoch, e.g. "Epoch (?P<%s>[0-9.]+)/(?P<%s>[0-9]+)"`,
			LogGroupEpoch, LogGroupEpoch, LogGroupTotal)
	}
	for _, n := range names {
		if n != "" && n != LogGroupEpoch && n != LogGroupTotal {
			return nil, fmt.Sprintf("has the named group %s; only %s and %s are read", quote(n), quote(LogGroupEpoch), quote(LogGroupTotal))
		}
	}
	return re, ""
}

// measureAnnotations reads AnnotationApplication and AnnotationProgressLog.
func measureAnnotations(a map[string]string) (app, progressLog string, err *FieldError) {
	if v, ok := a[AnnotationApplication]; ok {
		if !isLabelValue(v) {
			return "", "", &FieldError{Field: index("metadata.annotations", AnnotationApplication), Value: v,
				Reason: fmt.Sprintf("%s must be a Kubernetes label value: at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit", quote(v))}
		}
		app = v
	}
	if v, ok := a[AnnotationProgressLog]; ok {
		if _, why := CompileProgressLog(v); why != "" {
			return "", "", &FieldError{Field: index("metadata.annotations", AnnotationProgressLog), Value: v, Reason: why}
		}
		progressLog = v
	}
	return app, progressLog, nil
}
