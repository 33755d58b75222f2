package progress

import (
	"encoding/json"
	"strings"
	"testing"
)

// wire decodes a JSON report as the API does (the strict decoding of
// unknown and repeated keys is the API's; see internal/api).
func wire(t *testing.T, s string) Wire {
	t.Helper()
	var w Wire
	if err := json.Unmarshal([]byte(s), &w); err != nil {
		t.Fatal(err)
	}
	return w
}

const okReport = `{"generation": "g1", "workers": 4, "nodes": 1, "steps": 100, "samples": 3200, "epoch": 1.5, "totalEpochs": 90,
 "globalBatchSize": 32, "localBatchSize": 8, "stepSeconds": 0.2, "gradSqNorm": 1.5, "gradVariance": 0.25, "metrics": {"loss": 0.4, "top-1.acc": 0.8}, "final": true}`

func TestCheckAccepts(t *testing.T) {
	r, err := wire(t, okReport).Check(8)
	if err != nil {
		t.Fatal(err)
	}
	if r.Generation != "g1" || r.Workers != 4 || r.Nodes != 1 || r.Steps != 100 || r.Samples != 3200 || r.Epoch != 1.5 || r.TotalEpochs != 90 ||
		r.GlobalBatchSize != 32 || r.LocalBatchSize != 8 || r.StepSeconds != 0.2 || *r.GradSqNorm != 1.5 || *r.GradVariance != 0.25 ||
		r.Metrics["loss"] != 0.4 || !r.Final {
		t.Errorf("report %+v", r)
	}
	min, err := wire(t, `{"generation": "0", "workers": 1, "steps": 0, "epoch": 0}`).Check(1)
	if err != nil || min.Nodes != 0 || min.TotalEpochs != 0 || min.Metrics != nil {
		t.Errorf("minimal report: %+v, %v", min, err)
	}
}

func TestCheckRefuses(t *testing.T) {
	base := map[string]any{"generation": "g1", "workers": 4, "steps": 10, "epoch": 1.0}
	with := func(k string, v any) string {
		m := map[string]any{}
		for a, b := range base {
			m[a] = b
		}
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
		b, _ := json.Marshal(m)
		return string(b)
	}
	manyMetrics := map[string]float64{}
	for i := range MaxMetrics + 1 {
		manyMetrics[strings.Repeat("m", i+1)] = 1
	}
	for _, c := range []struct {
		name, body, field, reason string
	}{
		{"no generation", with("generation", nil), "generation", "required"},
		{"empty generation", with("generation", ""), "generation", "1 to 128 printable ASCII"},
		{"long generation", with("generation", strings.Repeat("g", 129)), "generation", "1 to 128"},
		{"control character in generation", with("generation", "g\n1"), "generation", "printable ASCII"},
		{"no workers", with("workers", nil), "workers", "required"},
		{"zero workers", with("workers", 0), "workers", "0 is outside [1, 8]"},
		{"too many workers", with("workers", 9), "workers", "9 is outside [1, 8]"},
		{"more nodes than workers", with("nodes", 5), "nodes", "5 is outside [0, workers 4]"},
		{"negative nodes", with("nodes", -1), "nodes", "outside"},
		{"no steps", with("steps", nil), "steps", "required"},
		{"negative steps", with("steps", -1), "steps", "-1 is outside [0, 1e+15]"},
		{"absurd steps", with("steps", int64(2e15)), "steps", "outside"},
		{"no epoch", with("epoch", nil), "epoch", "required"},
		{"negative epoch", with("epoch", -0.5), "epoch", "-0.5 is outside [0, 1e+06]"},
		{"absurd epoch", with("epoch", 2e6), "epoch", "outside"},
		{"negative samples", with("samples", -3), "samples", "outside"},
		{"zero total epochs", with("totalEpochs", 0), "totalEpochs", "0 is outside (0, 1e+06]"},
		{"zero batch", with("globalBatchSize", 0), "globalBatchSize", "0 is outside [1, 1e+09]"},
		{"huge local batch", with("localBatchSize", int64(2e9)), "localBatchSize", "outside"},
		{"zero step time", with("stepSeconds", 0), "stepSeconds", "outside (0, 86400]"},
		{"day-long step", with("stepSeconds", 90000), "stepSeconds", "outside"},
		{"negative gradient norm", with("gradSqNorm", -1), "gradSqNorm", "outside"},
		{"absurd gradient variance", with("gradVariance", 1e31), "gradVariance", "outside"},
		{"too many metrics", with("metrics", manyMetrics), "metrics", "has 17 entries; at most 16"},
		{"bad metric name", with("metrics", map[string]float64{"lo ss": 1}), "metrics[lo ss]", "1 to 64 characters"},
		{"long metric name", with("metrics", map[string]float64{strings.Repeat("x", 65): 1}), "metrics[" + strings.Repeat("x", 65) + "]", "1 to 64"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := wire(t, c.body).Check(8)
			if err == nil || err.Field != c.field || !strings.Contains(err.Reason, c.reason) {
				t.Errorf("Check(%s) = %v, want %s: ...%s...", c.body, err, c.field, c.reason)
			}
		})
	}
}

// FuzzCheck: whatever JSON arrives, Check answers without panicking, and
// an accepted report is within every limit.
func FuzzCheck(f *testing.F) {
	f.Add([]byte(okReport))
	f.Add([]byte(`{"generation": "0", "workers": 1, "steps": 0, "epoch": 0}`))
	f.Add([]byte(`{"generation": "x", "workers": 3, "nodes": 9, "steps": -1, "epoch": 1e300, "metrics": {"": 1}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var w Wire
		if json.Unmarshal(data, &w) != nil {
			return
		}
		r, err := w.Check(64)
		if err != nil {
			if err.Field == "" || err.Reason == "" {
				t.Fatalf("an error without field or reason: %+v", err)
			}
			return
		}
		if r.Workers < 1 || r.Workers > 64 || r.Nodes < 0 || r.Nodes > r.Workers || r.Steps < 0 || r.Epoch < 0 || r.Epoch > MaxEpochs ||
			len(r.Generation) == 0 || len(r.Generation) > MaxGeneration || len(r.Metrics) > MaxMetrics {
			t.Fatalf("accepted an out-of-limits report: %+v", r)
		}
	})
}
