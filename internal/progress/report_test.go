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
 "globalBatchSize": 32, "localBatchSize": 8, "stepSeconds": 0.2, "gradSqNorm": 1.5, "gradVariance": 0.25, "metrics": {"loss": 0.4, "top-1.acc": 0.8}, "final": true,
 "initBatchSize": 32, "maxBatchSize": 512, "minLocalBatchSize": 4, "maxLocalBatchSize": 16, "accumulationSteps": 0}`

func TestCheckAccepts(t *testing.T) {
	r, err := wire(t, okReport).Check(8)
	if err != nil {
		t.Fatal(err)
	}
	if r.Generation != "g1" || r.Workers != 4 || r.Nodes != 1 || r.Steps != 100 || r.Samples != 3200 || r.Epoch != 1.5 || r.TotalEpochs != 90 ||
		r.GlobalBatchSize != 32 || r.LocalBatchSize != 8 || r.StepSeconds != 0.2 || *r.GradSqNorm != 1.5 || *r.GradVariance != 0.25 ||
		r.Metrics["loss"] != 0.4 || !r.Final || r.Batch.Init != 32 || r.Batch.Max != 512 || r.Batch.MinLocal != 4 || r.Batch.MaxLocal != 16 ||
		r.Batch.Accumulation == nil || *r.Batch.Accumulation != 0 || !r.Batch.Adaptive() {
		t.Errorf("report %+v", r)
	}
	min, err := wire(t, `{"generation": "0", "workers": 1, "steps": 0, "epoch": 0}`).Check(1)
	if err != nil || min.Nodes != 0 || min.TotalEpochs != 0 || min.Metrics != nil || min.Batch != (Batch{}) {
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
	withAll := func(fields map[string]any) string {
		m := map[string]any{}
		for a, b := range base {
			m[a] = b
		}
		for a, b := range fields {
			m[a] = b
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
		{"zero initial batch", with("initBatchSize", 0), "initBatchSize", "0 is outside [1, 1e+09]"},
		{"huge maximum batch", with("maxBatchSize", int64(2e9)), "maxBatchSize", "outside"},
		{"zero local minimum", with("minLocalBatchSize", 0), "minLocalBatchSize", "outside"},
		{"zero local maximum", with("maxLocalBatchSize", 0), "maxLocalBatchSize", "outside"},
		{"negative accumulation", with("accumulationSteps", -1), "accumulationSteps", "-1 is outside [0, 1e+06]"},
		{"huge accumulation", with("accumulationSteps", int64(2e6)), "accumulationSteps", "outside"},
		{"maximum without initial", with("maxBatchSize", 64), "initBatchSize", "required with maxBatchSize"},
		{"local bound without initial", with("maxLocalBatchSize", 64), "initBatchSize", "required"},
		{"maximum below initial", withAll(map[string]any{"initBatchSize": 128, "maxBatchSize": 64}), "maxBatchSize", "64 is below initBatchSize 128"},
		{"local minimum above maximum", withAll(map[string]any{"initBatchSize": 128, "maxBatchSize": 1024, "minLocalBatchSize": 32, "maxLocalBatchSize": 16}),
			"minLocalBatchSize", "32 is above maxLocalBatchSize 16"},
		{"local minimum above the largest batch", withAll(map[string]any{"initBatchSize": 128, "maxBatchSize": 256, "minLocalBatchSize": 512}),
			"minLocalBatchSize", "512 is above the largest global batch size 256"},
		{"local batch above the global one", withAll(map[string]any{"globalBatchSize": 64, "localBatchSize": 32}), "localBatchSize", "32 on 4 workers is more than globalBatchSize 64"},
		{"accumulation inconsistent", withAll(map[string]any{"globalBatchSize": 256, "localBatchSize": 32, "accumulationSteps": 2}),
			"accumulationSteps", "localBatchSize 32 x workers 4 x (accumulationSteps + 1) is not globalBatchSize 256"},
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
	f.Add([]byte(`{"generation": "b", "workers": 2, "steps": 1, "epoch": 0, "globalBatchSize": 256, "localBatchSize": 64, "accumulationSteps": 1,
 "initBatchSize": 128, "maxBatchSize": 4096, "minLocalBatchSize": 8, "maxLocalBatchSize": 64}`))
	f.Add([]byte(`{"generation": "b", "workers": 2, "steps": 1, "epoch": 0, "maxBatchSize": 1, "minLocalBatchSize": 9, "accumulationSteps": -3}`))
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
			len(r.Generation) == 0 || len(r.Generation) > MaxGeneration || len(r.Metrics) > MaxMetrics ||
			r.Batch.Init < 0 || r.Batch.Init > MaxBatchSize || (r.Batch.Max > 0 && r.Batch.Max < r.Batch.Init) ||
			(r.Batch.MaxLocal > 0 && r.Batch.MinLocal > r.Batch.MaxLocal) || (r.Batch.Init == 0 && r.Batch != (Batch{Accumulation: r.Batch.Accumulation})) {
			t.Fatalf("accepted an out-of-limits report: %+v", r)
		}
		if r.Batch.Adaptive() {
			if err := r.Batch.Bounds().Check(); err != nil {
				t.Fatalf("accepted bounds goodput refuses: %+v: %v", r.Batch, err)
			}
		}
	})
}
