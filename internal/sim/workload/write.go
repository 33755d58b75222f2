package workload

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
)

// WriteVoda writes jobs in the Voda format (see ReadVoda), every column
// present, so that a workload read in any format can be kept in ours.
// Times keep full precision; epochs and duration are left empty when 0.
// Names must be valid Voda names (see ValidName; NormalizeNames makes them
// so) and the jobs must pass Validate; otherwise nothing is written.
func WriteVoda(w io.Writer, jobs []Job) error {
	if err := Validate(jobs); err != nil {
		return fmt.Errorf("write voda workload: %w", err)
	}
	for i, j := range jobs {
		if !ValidName(j.Name) {
			return fmt.Errorf("write voda workload: job %d: name %q is not valid in the voda format (see NormalizeNames)", i, j.Name)
		}
	}
	cw := csv.NewWriter(w)
	if err := cw.Write(vodaColumns); err != nil {
		return fmt.Errorf("write voda workload: %w", err)
	}
	for _, j := range jobs {
		epochs, duration := "", ""
		if j.Epochs > 0 {
			epochs = strconv.Itoa(j.Epochs)
		}
		if j.Duration > 0 {
			duration = formatSeconds(j.Duration)
		}
		rec := []string{
			j.Name, formatSeconds(j.Submit), j.App,
			strconv.Itoa(j.MinWorkers), strconv.Itoa(j.MaxWorkers), strconv.Itoa(j.Requested),
			strconv.Itoa(j.Priority), epochs, duration, strconv.Itoa(j.BatchSize),
		}
		if err := cw.Write(rec); err != nil {
			return fmt.Errorf("write voda workload: %w", err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("write voda workload: %w", err)
	}
	return nil
}

// formatSeconds writes the shortest decimal that reads back as x, without
// an exponent.
func formatSeconds(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
