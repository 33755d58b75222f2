package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/vodascheduler/voda/internal/goodput"
	"github.com/vodascheduler/voda/internal/progress"
)

// TestHostileBatchAdviceAgainstBinary is issue 30's batch advice against
// the running binary: a job declares bounds within the report limits
// (initial batch 4, maximum 10^9, one sample a worker's step) and a
// gradient variance at the limit. The reply's advice was 249,999,999
// accumulation steps with an lrScale of 2.5e8, and the report that ran
// it was refused with 400, so the job was never measured again. Now the
// advice keeps to the limits and two reports that run it are taken.
func TestHostileBatchAdviceAgainstBinary(t *testing.T) {
	srv := startServer(t, "--data-dir", t.TempDir(), "--sim-nodes", "v100=1x4", "--no-sim-reports",
		"--rate-limit", "1s", "--resync", "500ms", "--log-level", "warn")
	c := srv.Client()
	ctx := ctxT(t)
	j, err := c.CreateJob(ctx, manifest("advice", 4, 4, 1000))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the job running on 4 workers", 30*time.Second, func() (bool, error) {
		got, err := c.GetJob(ctx, j.Name)
		return err == nil && got.Status == "Running" && got.Workers == 4, err
	})
	url := srv.URL() + "/api/v1/jobs/" + j.Name + "/progress"
	var steps int64
	send := func(global, local, accum int) (int, progress.Reply, string) {
		steps += 10
		body, err := json.Marshal(map[string]any{"generation": "g", "workers": 4, "steps": steps, "epoch": float64(steps) / 1e4,
			"globalBatchSize": global, "localBatchSize": local, "accumulationSteps": accum, "stepSeconds": 0.1,
			"gradSqNorm": 1e-30, "gradVariance": 1e30, "initBatchSize": 4, "maxBatchSize": 1e9, "maxLocalBatchSize": 1})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.Post(url, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<12))
		var reply progress.Reply
		if resp.StatusCode == http.StatusOK {
			if err := json.Unmarshal(b, &reply); err != nil {
				t.Fatalf("reply %s: %v", b, err)
			}
		}
		return resp.StatusCode, reply, string(b)
	}
	var advice *progress.ReplyBatch
	waitFor(t, "a reply that advises a batch", 30*time.Second, func() (bool, error) {
		code, reply, body := send(4, 1, 0)
		if code != http.StatusOK {
			return false, fmt.Errorf("a report at the initial batch: %d %s", code, body)
		}
		advice = reply.Batch
		return advice != nil, nil
	})
	t.Logf("advice %+v", *advice)
	if advice.AccumulationSteps > progress.MaxAccumulation || advice.LocalSize > 1 || advice.Size > 1e9 ||
		advice.Size != 4*advice.LocalSize*(advice.AccumulationSteps+1) || advice.LRScale > goodput.MaxGain || advice.LRScale <= 0 {
		t.Errorf("advice %+v is not within the report's limits and the job's bounds on 4 workers", *advice)
	}
	for i := range 2 {
		if code, reply, body := send(advice.Size, advice.LocalSize, advice.AccumulationSteps); code != http.StatusOK {
			t.Fatalf("report %d that runs the advice: %d %s, want 200", i+1, code, body)
		} else if reply.Batch != nil {
			advice = reply.Batch
		}
	}
}
