package workload

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Sort orders jobs by submit time, then name: the order every reader
// returns, so that equal inputs give equal simulations.
func Sort(jobs []Job) {
	slices.SortStableFunc(jobs, func(a, b Job) int {
		if c := cmp.Compare(a.Submit, b.Submit); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
}

// Validate checks what every reader guarantees of its jobs: non-empty
// unique names and apps, 1 <= MinWorkers <= Requested <= MaxWorkers,
// finite non-negative times, non-negative priority, epochs and batch size,
// and not both Epochs and Duration. It does not check the order (see Sort)
// nor the Voda name syntax (see ValidName). It is meant for jobs built in
// code, such as Generate's or a test's.
func Validate(jobs []Job) error {
	seen := make(map[string]int, len(jobs))
	for i, j := range jobs {
		if err := validateJob(j); err != nil {
			return fmt.Errorf("job %d (%q): %w", i, j.Name, err)
		}
		if first, dup := seen[j.Name]; dup {
			return fmt.Errorf("job %d (%q): duplicate name (first at job %d)", i, j.Name, first)
		}
		seen[j.Name] = i
	}
	return nil
}

func validateJob(j Job) error {
	switch {
	case j.Name == "":
		return errors.New("empty name")
	case j.App == "":
		return errors.New("empty app")
	case !finite(j.Submit) || j.Submit < 0:
		return fmt.Errorf("submit %v is not a finite time >= 0", j.Submit)
	case j.MinWorkers < 1:
		return fmt.Errorf("min workers %d is below 1", j.MinWorkers)
	case j.Requested < j.MinWorkers:
		return fmt.Errorf("requested %d is below min workers %d", j.Requested, j.MinWorkers)
	case j.MaxWorkers < j.Requested:
		return fmt.Errorf("max workers %d is below requested %d", j.MaxWorkers, j.Requested)
	case j.Priority < 0:
		return fmt.Errorf("priority %d is negative", j.Priority)
	case j.Epochs < 0:
		return fmt.Errorf("epochs %d is negative", j.Epochs)
	case !finite(j.Duration) || j.Duration < 0:
		return fmt.Errorf("duration %v is not a finite time >= 0", j.Duration)
	case j.Epochs > 0 && j.Duration > 0:
		return errors.New("both epochs and duration are set")
	case j.BatchSize < 0:
		return fmt.Errorf("batch size %d is negative", j.BatchSize)
	}
	return nil
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// NormalizeNames returns a copy of jobs whose names are valid in the Voda
// format (see ValidName) and still unique, so that a trace with names such
// as Philly's "application_1506638472019_10238" can be written with
// WriteVoda. Valid names are kept; others are lower-cased, every run of
// other characters becomes '-', the ends are trimmed to a letter or digit,
// the result is cut to MaxNameLength, and a "-2", "-3"... suffix resolves
// clashes. An empty result becomes "job". The mapping depends only on the
// order of jobs.
func NormalizeNames(jobs []Job) []Job {
	out := slices.Clone(jobs)
	taken := make(map[string]bool, len(jobs))
	for _, j := range jobs {
		if ValidName(j.Name) {
			taken[j.Name] = true
		}
	}
	for i := range out {
		if ValidName(out[i].Name) {
			continue
		}
		base := sanitize(out[i].Name)
		name := base
		for n := 2; taken[name]; n++ {
			suffix := "-" + strconv.Itoa(n)
			name = strings.TrimRight(base[:min(len(base), MaxNameLength-len(suffix))], "-.") + suffix
		}
		taken[name] = true
		out[i].Name = name
	}
	return out
}

func sanitize(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '-' {
			b.WriteRune(r)
			dash = false
		} else if !dash {
			b.WriteByte('-')
			dash = true
		}
	}
	s := strings.Trim(b.String(), "-.")
	if len(s) > MaxNameLength {
		s = strings.TrimRight(s[:MaxNameLength], "-.")
	}
	if s == "" {
		s = "job"
	}
	return s
}
