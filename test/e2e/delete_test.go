package e2e

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// Deleting a job twice succeeds whenever the second delete comes: at once,
// and after the scheduler has halted the job, when it says so. Deleting a
// job that completed by itself is an error.
func TestDeleteTwice(t *testing.T) {
	srv := startServer(t, "--data-dir", t.TempDir(), "--sim-nodes", "v100=1x4", "--speed", "40")
	c := srv.Client()
	reaches := func(name, status string) func() (bool, error) {
		return func() (bool, error) {
			j, err := c.GetJob(ctxT(t), name)
			return j.Status == status, err
		}
	}
	long, err := c.CreateJob(ctxT(t), manifest("long", 1, 2, 1000))
	if err != nil {
		t.Fatal(err)
	}
	short, err := c.CreateJob(ctxT(t), manifest("short", 1, 2, 1))
	if err != nil {
		t.Fatal(err)
	}

	want := "Training job deleted: " + long.Name + "\n"
	if out, errOut, code := runCLI(t, srv, "delete", long.Name); code != 0 || out != want {
		t.Fatalf("delete: exit %d, stdout %q, stderr %q; want %q", code, out, errOut, want)
	}
	// The scheduler may have halted the job already, or not yet: a
	// second delete succeeds either way.
	again := []string{want, "Training job deleted: " + long.Name + " (already Canceled)\n"}
	if out, errOut, code := runCLI(t, srv, "delete", long.Name); code != 0 || !slices.Contains(again, out) {
		t.Fatalf("delete again at once: exit %d, stdout %q, stderr %q; want one of %q", code, out, errOut, again)
	}
	waitFor(t, long.Name+" Canceled", 60*time.Second, reaches(long.Name, "Canceled"))
	want = "Training job deleted: " + long.Name + " (already Canceled)\n"
	if out, errOut, code := runCLI(t, srv, "delete", long.Name); code != 0 || out != want {
		t.Errorf("delete after Canceled: exit %d, stdout %q, stderr %q; want %q", code, out, errOut, want)
	}

	waitFor(t, short.Name+" Completed", 120*time.Second, reaches(short.Name, "Completed"))
	out, errOut, code := runCLI(t, srv, "delete", short.Name)
	if code != 1 || out != "" || !strings.Contains(errOut, "already finished (Completed)") {
		t.Errorf("delete a completed job: exit %d, stdout %q, stderr %q; want exit 1 and already finished", code, out, errOut)
	}
}
