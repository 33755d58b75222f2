package workload

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
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

// FormatAuto makes Read pick the format with DetectFormat.
const FormatAuto = "auto"

// Read reads the workload file at path in the given format ("pollux",
// "voda", "duration", or "auto" to detect it; case-insensitive). Errors
// start with the path.
func Read(path, format string, opts Options) ([]Job, error) {
	f := strings.ToLower(strings.TrimSpace(format))
	switch f {
	case FormatPollux, FormatVoda, FormatDuration:
	case FormatAuto:
		var err error
		if f, err = DetectFormat(path); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("%s: unknown workload format %q (formats: %s, or %s)",
			path, format, strings.Join(Formats(), ", "), FormatAuto)
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

// DetectFormat tells the format of the workload file at path from its
// header: "duration" if it has the columns job_id, submission_time,
// duration and num_gpu; "pollux" if it has name, time, application and
// num_replicas; "voda" if it has name, submit and app. Comment lines
// ('#') before the header are skipped. Errors start with the path.
func DetectFormat(path string) (string, error) {
	file, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("detect workload format: %w", err)
	}
	defer file.Close()
	format, err := detectFormat(bufio.NewReader(file))
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return format, nil
}

func detectFormat(r io.Reader) (string, error) {
	cr := csv.NewReader(r)
	cr.Comment = '#'
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	hdr, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return "", lineErr(1, "", "missing header (empty input)")
	}
	if err != nil {
		return "", csvErr(err)
	}
	line, _ := cr.FieldPos(0)
	cols := map[string]bool{}
	for i, h := range hdr {
		if i == 0 {
			h = strings.TrimPrefix(h, "\ufeff")
		}
		cols[strings.ToLower(strings.TrimSpace(h))] = true
	}
	hasAll := func(names ...string) bool {
		for _, n := range names {
			if !cols[n] {
				return false
			}
		}
		return true
	}
	switch {
	case hasAll("job_id", "submission_time", "duration", "num_gpu"):
		return FormatDuration, nil
	case hasAll("name", "time", "application", "num_replicas"):
		return FormatPollux, nil
	case hasAll("name", "submit", "app"):
		return FormatVoda, nil
	}
	return "", lineErr(line, "", "cannot tell the workload format from the header %q: want "+
		"pollux (name,time,application,num_replicas,batch_size), "+
		"voda (name,submit,app,...) or "+
		"duration (job_id,submission_time,duration,num_gpu)", strings.Join(hdr, ","))
}
