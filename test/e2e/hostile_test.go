package e2e

import (
	"cmp"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vodascheduler/voda/internal/api/client"
)

// hostileManifest is an entry of internal/jobspec's table of manifests
// that would have Voda create what its user may not.
type hostileManifest struct {
	What        string   `json:"what"`
	PodSecurity string   `json:"podSecurity"`
	Namespaces  []string `json:"namespaces"`
	Manifest    string   `json:"manifest"`
	Field       string   `json:"field"`
	Reason      string   `json:"reason"`
}

// TestHostileManifestsAgainstBinary submits every entry of jobspec's
// hostile-manifest table (kept equal to its unit test's by
// TestHostileManifestsFile) to the running binary, at the entry's
// --pod-security level: each is a 400 naming its field with the rule's
// reason, and no job is stored. The entries that need a server's
// namespace list run on the control plane instead (test/kube's
// TestHostileManifestsCreateNothing), since a simulated cluster takes any
// namespace.
func TestHostileManifestsAgainstBinary(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "internal", "jobspec", "testdata", "hostile-manifests.json"))
	if err != nil {
		t.Fatal(err)
	}
	var table []hostileManifest
	if err := json.Unmarshal(b, &table); err != nil {
		t.Fatal(err)
	}
	byLevel := map[string][]hostileManifest{}
	for _, h := range table {
		if len(h.Namespaces) > 0 {
			t.Logf("%s: on the control plane (test/kube)", h.What)
			continue
		}
		level := cmp.Or(h.PodSecurity, "baseline")
		byLevel[level] = append(byLevel[level], h)
	}
	if len(byLevel["baseline"]) < 20 {
		t.Fatalf("only %d entries at baseline: is the table whole?", len(byLevel["baseline"]))
	}
	for _, level := range []string{"baseline", "restricted", "privileged"} {
		t.Run(level, func(t *testing.T) {
			srv := startServer(t, "--data-dir", t.TempDir(), "--log-level", "warn", "--pod-security", level)
			c := srv.Client()
			for _, h := range byLevel[level] {
				_, err := c.CreateJob(ctxT(t), []byte(h.Manifest))
				var apiErr *client.APIError
				if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || apiErr.Field != h.Field || !strings.Contains(apiErr.Message, h.Reason) {
					t.Errorf("%s: %v, want a 400 naming %s with %q", h.What, err, h.Field, h.Reason)
					continue
				}
				t.Logf("%d %s: %s", apiErr.StatusCode, h.What, apiErr.Field)
			}
			if jobs, err := c.ListJobs(ctxT(t), clientListAll); err != nil || len(jobs) != 0 {
				t.Errorf("after the hostile manifests the server holds %d jobs (%v), want none", len(jobs), err)
			}
		})
	}
}
