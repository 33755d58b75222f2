package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"
)

// poisonManifest is a job of one worker of namespace ns whose
// application is victim-app, 100 epochs.
func poisonManifest(name, ns string) []byte { return appManifest(name, ns, "victim-app", 100, 1) }

// TestPoisonedApplicationStaysInItsNamespace: a job of team-a that names
// the application victim-app reports 1e-7 epochs a second, then is
// deleted, which folds its measurements into victim-app's history. A new
// victim-app job of team-b is not judged by that history: the poisoner's
// namespace keys it (estimate.AppKey). Before, any namespace's job of
// victim-app was estimated to need about 1e9 s (1e-7 epochs/s) and, under
// allocators that weigh remaining time, waited behind every other job. A
// new victim-app job of team-a shows that the poison took.
func TestPoisonedApplicationStaysInItsNamespace(t *testing.T) {
	srv := startServer(t, "--data-dir", t.TempDir(), "--sim-nodes", "v100=1x8", "--no-sim-reports",
		"--rate-limit", "1s", "--resync", "500ms", "--log-level", "warn")
	c := srv.Client()
	ctx := ctxT(t)
	code, body, _, _ := post(t, srv, poisonManifest("poison", "team-a"))
	if code != http.StatusCreated {
		t.Fatalf("the poisoner: %d %s", code, body)
	}
	poison, _ := jsonField([]byte(body), "name")
	waitFor(t, "the poisoner running on one worker", time.Minute, func() (bool, error) {
		j, err := c.GetJob(ctx, poison)
		return err == nil && j.Status == "Running" && j.Workers == 1, err
	})
	url := srv.URL() + "/api/v1/jobs/" + poison + "/progress"
	report := func(i int) {
		t.Helper()
		b := fmt.Sprintf(`{"generation": "p", "workers": 1, "steps": %d, "epoch": %g}`, i, float64(i)*1e-7)
		resp, err := http.Post(url, "application/json", bytes.NewReader([]byte(b)))
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("report %d: %d %s", i, resp.StatusCode, out)
		}
	}
	// The first report opens the generation, the second ends its warm-up;
	// the later ones measure it.
	for i := range 6 {
		report(i)
		// The server's clock must move between reports for them to measure.
		s, err := c.GetScheduler(ctx, "v100")
		if err != nil || s.Now == nil {
			t.Fatalf("the scheduler's clock: %v", err)
		}
		before := *s.Now
		waitFor(t, "the server's clock to move", time.Minute, func() (bool, error) {
			s, err := c.GetScheduler(ctx, "v100")
			return err == nil && s.Now != nil && s.Now.Sub(before) >= 100*time.Millisecond, err
		})
	}
	t.Logf("reported at %s", time.Now().Format("15:04:05.000"))
	waitFor(t, "the poisoner's slow rate measured", time.Minute, func() (bool, error) {
		j, err := c.GetJob(ctx, poison)
		return err == nil && j.Measured != nil && len(j.Measured.Throughput) > 0, err
	})
	t.Logf("measured at %s", time.Now().Format("15:04:05.000"))
	if _, err := c.DeleteJob(ctx, poison); err != nil {
		t.Fatal(err)
	}

	victims := map[string]string{}
	for _, ns := range []string{"team-a", "team-b"} {
		code, body, _, _ := post(t, srv, poisonManifest("victim", ns))
		if code != http.StatusCreated {
			t.Fatalf("the victim of %s: %d %s", ns, code, body)
		}
		victims[ns], _ = jsonField([]byte(body), "name")
	}
	// team-a's victim is judged by its namespace's history: the poison.
	waitFor(t, "team-a's victim estimated from team-a's poisoned history", time.Minute, func() (bool, error) {
		j, err := c.GetJob(ctx, victims["team-a"])
		if err != nil {
			return false, err
		}
		return j.RemainingSeconds != nil && *j.RemainingSeconds > 1e8, fmt.Errorf("remaining %v", fmtPtr(j.RemainingSeconds))
	})
	t.Logf("team-a's victim poisoned at %s", time.Now().Format("15:04:05.000"))
	j, err := c.GetJob(ctx, victims["team-b"])
	if err != nil {
		t.Fatal(err)
	}
	if j.RemainingSeconds != nil && *j.RemainingSeconds > 1e6 {
		t.Errorf("team-b's victim-app job is estimated at %.3g s: team-a's poisoned history reached it", *j.RemainingSeconds)
	}
}

func fmtPtr(p *float64) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprintf("%.3g s", *p)
}
