package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vodascheduler/voda/internal/api"
	"github.com/vodascheduler/voda/internal/api/client"
)

// finishedAndLive splits a server's jobs into the finished and the live
// ones, by name.
func finishedAndLive(t *testing.T, c *client.Client) (finished, live []string, err error) {
	t.Helper()
	jobs, err := c.ListJobs(ctxT(t), client.ListOptions{})
	for _, j := range jobs {
		if client.Removed(j) {
			finished = append(finished, j.Name)
		} else {
			live = append(live, j.Name)
		}
	}
	return finished, live, err
}

func isNotFound(err error) bool {
	var ae *client.APIError
	return errors.As(err, &ae) && ae.StatusCode == http.StatusNotFound
}

// TestListPagesAgainstTheBinary: the server answers pages with continue
// tokens, the CLI and the Go client read every page into one list, and
// `voda delete $(voda get jobs -o name)` halts the live jobs, then removes
// them once finished.
func TestListPagesAgainstTheBinary(t *testing.T) {
	srv := startServer(t, "--data-dir", t.TempDir(), "--sim-nodes", "v100=1x4", "--speed", "40")
	c := srv.Client()
	var names []string
	for i := range 7 {
		j, err := c.CreateJob(ctxT(t), manifest(fmt.Sprintf("page%d", i), 1, 1, 100000))
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, j.Name)
	}
	// The raw pages.
	var got []string
	cont, pages := "", 0
	for {
		q := url.Values{"limit": {"3"}}
		if cont != "" {
			q.Set("continue", cont)
		}
		resp, err := srv.HTTPClient().Get(srv.URL() + api.RouteJobs + "?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		var list api.JobList
		if err != nil || resp.StatusCode != http.StatusOK || json.Unmarshal(b, &list) != nil {
			t.Fatalf("page %d: %d %s (%v)", pages+1, resp.StatusCode, b, err)
		}
		pages++
		for _, j := range list.Items {
			got = append(got, j.Name)
		}
		if cont = list.Metadata.Continue; cont == "" {
			break
		}
	}
	if !slices.Equal(got, names) || pages != 3 {
		t.Errorf("%d pages of %v, want 3 of %v", pages, got, names)
	}
	all, err := c.ListJobs(ctxT(t), client.ListOptions{PageSize: 2})
	if err != nil || len(all) != len(names) {
		t.Fatalf("client, pages of 2: %d jobs, %v", len(all), err)
	}
	out, errOut, code := runCLI(t, srv, "get", "jobs", "-o", "name", "--chunk-size", "2")
	if code != 0 || out != strings.Join(names, "\n")+"\n" {
		t.Fatalf("get jobs -o name --chunk-size 2: exit %d, %q, %q", code, out, errOut)
	}
	out, errOut, code = runCLI(t, srv, "get", "jobs", "-o", "json", "--chunk-size", "2")
	var list api.JobList
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list.Items) != len(names) || list.Metadata.Continue != "" {
		t.Fatalf("get jobs -o json --chunk-size 2: exit %d, %d jobs, continue %q, stderr %q", code, len(list.Items), list.Metadata.Continue, errOut)
	}

	// voda delete $(voda get jobs -o name): halted, then removed.
	out, errOut, code = runCLI(t, srv, append([]string{"delete"}, names...)...)
	if code != 0 || strings.Count(out, "Training job deleted: ") != len(names) {
		t.Fatalf("delete: exit %d, %q, %q", code, out, errOut)
	}
	waitFor(t, "every job Canceled", 60*time.Second, func() (bool, error) {
		finished, _, err := finishedAndLive(t, c)
		return len(finished) == len(names), err
	})
	out, errOut, code = runCLI(t, srv, "get", "jobs", "-o", "name", "--chunk-size", "2")
	if code != 0 {
		t.Fatalf("get jobs: exit %d, %q", code, errOut)
	}
	out, errOut, code = runCLI(t, srv, append([]string{"delete"}, strings.Fields(out)...)...)
	if code != 0 || strings.Count(out, "(was Canceled; record removed)") != len(names) {
		t.Fatalf("delete the Canceled jobs: exit %d, %q, %q", code, out, errOut)
	}
	if jobs, err := c.ListJobs(ctxT(t), client.ListOptions{}); err != nil || len(jobs) != 0 {
		t.Errorf("after removing every job: %d jobs, %v", len(jobs), err)
	}
}
