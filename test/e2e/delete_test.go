package e2e

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// Deleting a running job halts it, and deleting it again succeeds while
// it is halted; once it is Canceled, deleting it removes its record, as
// deleting a job that completed by itself does. Then the job is gone.
func TestDeleteThenRemove(t *testing.T) {
	srv := startServer(t, "--data-dir", t.TempDir(), "--sim-nodes", "v100=1x4", "--speed", "40")
	c := srv.Client()
	reaches := func(name, status string) func() (bool, error) {
		return func() (bool, error) {
			j, err := c.GetJob(ctxT(t), name)
			return string(j.Status) == status, err
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

	halting := "Training job deleted: " + long.Name + "\n"
	removed := "Training job deleted: " + long.Name + " (was Canceled; record removed)\n"
	if out, errOut, code := runCLI(t, srv, "delete", long.Name); code != 0 || out != halting {
		t.Fatalf("delete: exit %d, stdout %q, stderr %q; want %q", code, out, errOut, halting)
	}
	// The scheduler may have halted the job already, or not yet: a
	// second delete succeeds either way.
	out, errOut, code := runCLI(t, srv, "delete", long.Name)
	if code != 0 || !slices.Contains([]string{halting, removed}, out) {
		t.Fatalf("delete again at once: exit %d, stdout %q, stderr %q; want %q or %q", code, out, errOut, halting, removed)
	}
	if out == halting {
		waitFor(t, long.Name+" Canceled", 60*time.Second, reaches(long.Name, "Canceled"))
		if out, errOut, code := runCLI(t, srv, "delete", long.Name); code != 0 || out != removed {
			t.Fatalf("delete after Canceled: exit %d, stdout %q, stderr %q; want %q", code, out, errOut, removed)
		}
	}
	out, errOut, code = runCLI(t, srv, "delete", long.Name)
	if code != 1 || out != "" || !strings.Contains(errOut, `no job "`+long.Name+`"`) {
		t.Errorf("delete a removed job: exit %d, stdout %q, stderr %q; want exit 1 and no job", code, out, errOut)
	}

	waitFor(t, short.Name+" Completed", 120*time.Second, reaches(short.Name, "Completed"))
	want := "Training job deleted: " + short.Name + " (was Completed; record removed)\n"
	if out, errOut, code := runCLI(t, srv, "delete", short.Name); code != 0 || out != want {
		t.Errorf("delete a completed job: exit %d, stdout %q, stderr %q; want %q", code, out, errOut, want)
	}
	if _, err := c.GetJob(ctxT(t), short.Name); !isNotFound(err) {
		t.Errorf("get a removed job: %v, want 404", err)
	}
}
