package workload

import (
	"bufio"
	"fmt"
	"os"
	"strings"
)

// Workload formats accepted by Read.
const (
	FormatPollux   = "pollux"
	FormatVoda     = "voda"
	FormatDuration = "duration"
)

// Formats returns the names of the formats Read accepts.
func Formats() []string {
	return []string{FormatPollux, FormatVoda, FormatDuration}
}

// Options holds the settings of the formats that need any.
type Options struct {
	// Duration is used by the "duration" format.
	Duration DurationOptions
}

// Read reads the workload file at path in the given format ("pollux",
// "voda" or "duration", case-insensitive). Errors start with the path.
func Read(path, format string, opts Options) ([]Job, error) {
	f := strings.ToLower(strings.TrimSpace(format))
	switch f {
	case FormatPollux, FormatVoda, FormatDuration:
	default:
		return nil, fmt.Errorf("%s: unknown workload format %q (formats: %s)",
			path, format, strings.Join(Formats(), ", "))
	}
	file, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read workload: %w", err)
	}
	defer file.Close()
	r := bufio.NewReader(file)
	var jobs []Job
	switch f {
	case FormatPollux:
		jobs, err = ReadPollux(r)
	case FormatVoda:
		jobs, err = ReadVoda(r)
	case FormatDuration:
		jobs, err = ReadDuration(r, opts.Duration)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return jobs, nil
}
