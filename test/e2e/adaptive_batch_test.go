package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vodascheduler/voda/internal/progress"
)

// debianPython is the interpreter python3-torch installs into
// (hack/test-deps.sh), which need not be the python3 first on PATH.
const debianPython = "/usr/bin/python3"

// epochLine is what sdk/python/examples/adaptive_batch.py logs per epoch.
type epochLine struct {
	Epoch      int     `json:"epoch"`
	Batch      int     `json:"batch"`
	LocalBatch int     `json:"localBatch"`
	Accum      int     `json:"accumulationSteps"`
	LR         float64 `json:"lr"`
	// The advice the epoch began with, and the reporter's at its end:
	// the reply's batch as the library keeps it.
	Advice      *progress.ReplyBatch `json:"advice"`
	AdviceAtEnd *progress.ReplyBatch `json:"adviceAtEnd"`
}

// TestAdaptiveBatchExample runs the SDK's PyTorch example
// (sdk/python/examples/adaptive_batch.py; Debian's python3-torch, CPU) as
// the reporter of a job of the running binary's simulated cluster, whose
// own reports are off (--no-sim-reports): once Voda has measured its step
// time, the replies advise a batch size for its one worker, and the
// example trains every later epoch on the batch advised before it began,
// with its learning rate scaled as advised.
func TestAdaptiveBatchExample(t *testing.T) {
	if out, err := exec.Command(debianPython, "-c", "import torch").CombinedOutput(); err != nil {
		t.Fatalf("%s cannot import torch (run hack/test-deps.sh, which installs python3-torch): %v\n%s", debianPython, err, out)
	}
	srv := startServer(t, "--data-dir", t.TempDir(), "--sim-nodes", "v100=1x4", "--no-sim-reports",
		"--rate-limit", "1s", "--resync", "500ms", "--log-level", "warn")
	c := srv.Client()
	ctx := ctxT(t)
	j, err := c.CreateJob(ctx, manifest("adaptive", 1, 1, 1000))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the job running on one worker", 30*time.Second, func() (bool, error) {
		got, err := c.GetJob(ctx, j.Name)
		return err == nil && got.Status == "Running" && got.Workers == 1, err
	})

	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(t.TempDir(), "epochs.jsonl")
	run, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const lr = 0.05
	cmd := exec.CommandContext(run, debianPython, filepath.Join(root, "sdk/python/examples/adaptive_batch.py"),
		"--epochs", "10", "--samples", "32768", "--init-batch", "32", "--max-batch", "2048", "--max-local", "256",
		"--lr", "0.05", "--log", logFile)
	cmd.Env = append(cleanEnv(), "PYTHONPATH="+filepath.Join(root, "sdk/python/src"),
		"VODA_PROGRESS_URL="+srv.URL()+"/api/v1/jobs/"+j.Name+"/progress")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the example: %v\n%s", err, out)
	}
	data, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	var epochs []epochLine
	for sc := bufio.NewScanner(bytes.NewReader(data)); sc.Scan(); {
		var e epochLine
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("epoch line %q: %v", sc.Text(), err)
		}
		epochs = append(epochs, e)
		t.Logf("epoch %d: batch %d (%d x %d), lr %.4g, advice at start %+v, at end %+v", e.Epoch, e.Batch, e.LocalBatch, e.Accum+1, e.LR, e.Advice, e.AdviceAtEnd)
	}
	if len(epochs) != 10 {
		t.Fatalf("%d epochs logged, want 10:\n%s", len(epochs), data)
	}
	advised := 0
	for i, e := range epochs {
		if e.Advice == nil {
			if advised > 0 || e.Batch != 32 || e.LR != lr {
				t.Errorf("epoch %d without advice ran batch %d at lr %v, want the initial 32 at %v (and advice, once given, stays)", i, e.Batch, e.LR, lr)
			}
			continue
		}
		advised++
		a := e.Advice
		if a.Size < 32 || a.Size > 2048 || a.LocalSize > 256 || a.Size != a.LocalSize*(a.AccumulationSteps+1) || a.LRScale < 1 {
			t.Errorf("epoch %d: advice %+v is not a batch within the bounds for one worker", i, a)
		}
		if e.Batch != a.Size || e.LocalBatch != a.LocalSize || e.Accum != a.AccumulationSteps || math.Abs(e.LR-lr*a.LRScale) > 1e-9 {
			t.Errorf("epoch %d ran batch %d (%d x %d) at lr %v, not the advice %+v it began with", i, e.Batch, e.LocalBatch, e.Accum+1, e.LR, a)
		}
		if i == 0 || epochs[i-1].AdviceAtEnd == nil {
			t.Errorf("epoch %d began with advice the epoch before had not received", i)
		}
	}
	if advised == 0 {
		t.Fatalf("no epoch trained on an advised batch:\n%s\nthe example's output:\n%s", data, out)
	}
}

// cleanEnv is the test's environment without Voda's, Python's or torch's
// variables, which are the test's to give.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "VODA_") || strings.HasPrefix(name, "PYTHON") || strings.HasPrefix(name, "TORCH") ||
			name == "RANK" || name == "WORLD_SIZE" || name == "LOCAL_WORLD_SIZE" {
			continue
		}
		env = append(env, kv)
	}
	return env
}
