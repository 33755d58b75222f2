package server

import (
	"bufio"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/vodascheduler/voda/internal/api"
	"github.com/vodascheduler/voda/internal/api/client"
)

// On the simulated cluster, a submission shows in the event stream within
// 2 s, then its start and its GPUs on the node; the shutdown ends the
// stream.
func TestRunSimStreamsEvents(t *testing.T) {
	cfg := simConfig(t)
	cfg.RateLimit = 100 * time.Millisecond // the job starts at once
	base, stop := runSim(t, cfg)
	ctx := t.Context()

	resp, err := http.Get(base + api.RouteEvents)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := make(chan string, 1024)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	// wait returns the first line with every part, failing after within.
	wait := func(what string, within time.Duration, parts ...string) string {
		t.Helper()
		timeout := time.After(within)
		for {
			select {
			case line, ok := <-lines:
				if !ok {
					t.Fatalf("stream ended waiting for %s", what)
				}
				all := true
				for _, p := range parts {
					all = all && strings.Contains(line, p)
				}
				if all {
					return line
				}
			case <-timeout:
				t.Fatalf("no %s within %v", what, within)
			}
		}
	}
	wait("snapshot", 5*time.Second, "event: snapshot")

	manifest, err := os.ReadFile(example)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(base, nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	job, err := c.CreateJob(ctx, manifest)
	if err != nil {
		t.Fatal(err)
	}
	first := wait("the job's event", 2*time.Second, `"name":"`+job.Name+`"`)
	t.Logf("submission to its event: %v", time.Since(start))
	if !strings.Contains(first, `"status":"Running"`) { // the scheduler may have been quicker than the poll
		wait("the job running", 10*time.Second, `"name":"`+job.Name+`"`, `"status":"Running"`)
	}
	wait("its GPUs on the node", 10*time.Second, `"gpuType":"nvidia-tesla-v100","nodes":[`, `"name":"`+job.Name+`"`)

	stopped := time.Now()
	stop()
	for range lines { // the shutdown ended the stream
	}
	t.Logf("the server and the stream stopped %v after the cancel", time.Since(stopped))
}
