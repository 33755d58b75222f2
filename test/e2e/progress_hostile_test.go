package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestHostileReportsAgainstBinary sends the worst progress reports we
// could think of to the running binary: each is refused with a 4xx, and
// the job keeps no report.
func TestHostileReportsAgainstBinary(t *testing.T) {
	srv := startServer(t, "--data-dir", t.TempDir(), "--sim-nodes", "v100=1x4", "--log-level", "warn")
	ctx := ctxT(t)
	j, err := srv.Client().CreateJob(ctx, manifest("target", 1, 1, 1000))
	if err != nil {
		t.Fatal(err)
	}
	url := srv.URL() + "/api/v1/jobs/" + j.Name + "/progress"
	manyMetrics := map[string]float64{}
	for i := range 1000 {
		manyMetrics[fmt.Sprint("m", i)] = 1
	}
	many, _ := json.Marshal(map[string]any{"generation": "g", "workers": 1, "steps": 1, "epoch": 1, "metrics": manyMetrics})
	for _, c := range []struct {
		name, url, contentType, body string
		code                         int
	}{
		{"8 MiB body", url, "application/json", `{"generation": "` + strings.Repeat("g", 8<<20) + `"}`, 413},
		{"deep nesting", url, "application/json", strings.Repeat(`{"metrics":`, 2000) + "1" + strings.Repeat("}", 2000), 400},
		{"1,000 metrics", url, "application/json", string(many), 400},
		{"negative steps", url, "application/json", `{"generation": "g", "workers": 1, "steps": -1, "epoch": 1}`, 400},
		{"steps past int64", url, "application/json", `{"generation": "g", "workers": 1, "steps": 99999999999999999999999, "epoch": 1}`, 400},
		{"epoch 1e308", url, "application/json", `{"generation": "g", "workers": 1, "steps": 1, "epoch": 1e308}`, 400},
		{"workers 2^31", url, "application/json", `{"generation": "g", "workers": 2147483648, "steps": 1, "epoch": 1}`, 400},
		{"nodes above workers", url, "application/json", `{"generation": "g", "workers": 1, "nodes": 2, "steps": 1, "epoch": 1}`, 400},
		{"control characters in the generation", url, "application/json", `{"generation": "g\u0000\n", "workers": 1, "steps": 1, "epoch": 1}`, 400},
		{"max batch 2^63", url, "application/json", `{"generation": "g", "workers": 1, "steps": 1, "epoch": 1, "globalBatchSize": 32, "initBatchSize": 32, "maxBatchSize": 9223372036854775808}`, 400},
		{"max batch below the initial", url, "application/json", `{"generation": "g", "workers": 1, "steps": 1, "epoch": 1, "globalBatchSize": 32, "initBatchSize": 64, "maxBatchSize": 32}`, 400},
		{"bounds without an initial batch", url, "application/json", `{"generation": "g", "workers": 1, "steps": 1, "epoch": 1, "maxBatchSize": 4096}`, 400},
		{"local batch bounds crossed", url, "application/json", `{"generation": "g", "workers": 1, "steps": 1, "epoch": 1, "initBatchSize": 32, "maxBatchSize": 4096, "minLocalBatchSize": 64, "maxLocalBatchSize": 8}`, 400},
		{"accumulation that does not add up", url, "application/json", `{"generation": "g", "workers": 2, "steps": 1, "epoch": 1, "globalBatchSize": 100, "localBatchSize": 32, "accumulationSteps": 5, "initBatchSize": 32, "maxBatchSize": 4096}`, 400},
		{"negative gradient variance", url, "application/json", `{"generation": "g", "workers": 1, "steps": 1, "epoch": 1, "gradSqNorm": 1, "gradVariance": -1}`, 400},
		{"an array", url, "application/json", `[1, 2, 3]`, 400},
		{"form", url, "application/x-www-form-urlencoded", `generation=g`, 415},
		{"no such job", srv.URL() + "/api/v1/jobs/nosuch/progress", "application/json", `{"generation": "g", "workers": 1, "steps": 1, "epoch": 1}`, 404},
		{"path traversal", srv.URL() + "/api/v1/jobs/..%2f..%2fetc/progress", "application/json", `{"generation": "g", "workers": 1, "steps": 1, "epoch": 1}`, 404},
	} {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader([]byte(c.body)))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", c.contentType)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
		resp.Body.Close()
		if resp.StatusCode != c.code {
			t.Errorf("%s: %d %s, want %d", c.name, resp.StatusCode, b, c.code)
		} else {
			t.Logf("%s: %d %.120s", c.name, resp.StatusCode, bytes.TrimSpace(b))
		}
	}
	got, err := srv.Client().GetJob(ctx, j.Name)
	if err != nil {
		t.Fatal(err)
	}
	if got.Measured != nil && got.Measured.Generation == "g" {
		t.Errorf("a refused report was kept: %+v", got.Measured)
	}
}
