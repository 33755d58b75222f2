package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vodascheduler/voda/internal/api"
)

// TestPerJobMetrics runs the binary with and without --per-job-metrics on
// the same workload: two jobs of namespace team-a running and reporting
// their progress, one waiting. On (the default), their series carry the
// namespace; off, no line of /metrics names a job, at any scrape until
// the scheduler has measured the running jobs' speed and timed the
// waiting one's wait (when, with the flag on, every per-job gauge exists).
func TestPerJobMetrics(t *testing.T) {
	body := bytes.Replace(manifest("exposed", 1, 1, 1000), []byte("metadata:\n"), []byte("metadata:\n  namespace: team-a\n"), 1)
	tests := []struct {
		name string
		args []string
		on   bool
	}{
		{"on by default", nil, true},
		{"off", []string{"--per-job-metrics=false"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"--sim-nodes", "v100=1x2", "--data-dir", t.TempDir(), "--speed", "60", "--log-level", "warn"}, tt.args...)
			srv := startServer(t, args...)
			names := submitAll(t, srv, 3, body)
			// The job names end in a suffix the server chose; any line
			// naming one names it whole.
			named := regexp.MustCompile(`exposed-[a-z0-9-]+`)
			cycles := regexp.MustCompile(`(?m)^voda_reschedules_total\{gpu_type="v100"\} (\d+)$`)
			seenAt := -1 // the cycles counted when the jobs were first seen measured and waiting
			waitFor(t, "two jobs measured while running, one waiting, and their series as the flag says", 120*time.Second, func() (bool, error) {
				list, err := srv.Client().ListJobs(ctxT(t), clientListAll)
				if err != nil {
					return false, err
				}
				measured, waiting := 0, 0
				for _, j := range list {
					switch {
					// A measured speed: the interval the
					// throughput gauge is set from was used.
					case j.Status == "Running" && j.Measured != nil && len(j.Measured.Throughput) > 0 && j.EstimatedFinish != nil:
						measured++
					case j.Status == "Waiting" && j.WaitingSeconds > 0:
						waiting++
					}
				}
				text, err := scrapeText(srv)
				if err != nil {
					return false, err
				}
				if !tt.on {
					// Checked at every scrape, not only the last,
					// until three more cycles ran after the jobs were
					// seen measured and waiting: the views come from the
					// store, and the scheduler sets the gauges at its
					// own pace.
					if m := named.FindString(text); m != "" {
						t.Fatalf("--per-job-metrics=false, yet /metrics names job %s:\n%s", m, linesWith(text, m))
					}
					c := cycles.FindStringSubmatch(text)
					if c == nil {
						return false, errors.New("no voda_reschedules_total of v100")
					}
					n, _ := strconv.Atoi(c[1])
					if seenAt < 0 && measured == 2 && waiting == 1 {
						seenAt = n
					}
					return seenAt >= 0 && n >= seenAt+3, fmt.Errorf("%d running jobs measured (want 2), %d waiting (want 1), %d cycles since (want 3)", measured, waiting, n-seenAt)
				}
				for _, n := range names {
					want := `job_name="` + n + `",namespace="team-a"}`
					if !strings.Contains(text, want) {
						return false, fmt.Errorf("no series with %s", want)
					}
				}
				for _, metric := range []string{"voda_job_progress", "voda_job_remaining_seconds", "voda_job_throughput_epochs_per_hour", "voda_job_waiting_seconds"} {
					if !strings.Contains(text, "\n"+metric+`{gpu_type="v100",job_name="exposed-`) {
						return false, fmt.Errorf("no series of %s", metric)
					}
				}
				return measured == 2 && waiting == 1, fmt.Errorf("%d running jobs measured (want 2), %d waiting (want 1)", measured, waiting)
			})
		})
	}
}

// scrapeText is the server's /metrics as text.
func scrapeText(srv *server) (string, error) {
	resp, err := http.Get(srv.URL() + api.RouteMetrics)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", api.RouteMetrics, resp.Status)
	}
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// linesWith is text's lines holding s.
func linesWith(text, s string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
