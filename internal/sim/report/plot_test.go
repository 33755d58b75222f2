package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPlot(t *testing.T) {
	dir := t.TempDir()
	fifo := syntheticRun("fifo", 1, 40, 16, false)
	elastic := syntheticRun("elastic", 1, 40, 16, true)
	for _, tc := range []struct {
		name string
		runs []*Run
	}{
		{"one.png", []*Run{elastic}},
		{"two.svg", []*Run{fifo, elastic}},
		{"two.pdf", []*Run{fifo, elastic}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name)
			if err := Plot(path, tc.runs); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			magic := map[string]string{".png": "\x89PNG", ".svg": "<?xml", ".pdf": "%PDF"}[filepath.Ext(path)]
			if !bytes.HasPrefix(b, []byte(magic)) || len(b) < 1000 {
				t.Errorf("%s: %d bytes starting %q, want a real %s file", path, len(b), b[:min(len(b), 8)], magic)
			}
		})
	}
	if os.Getenv("VODA_PLOT_SAMPLE") != "" {
		// To look at the figures: VODA_PLOT_SAMPLE=/tmp/x go test -run TestPlot
		// writes /tmp/x-one.png and /tmp/x-two.png.
		big := syntheticRun("elastic", 7, 160, 64, true)
		rigid := syntheticRun("fifo", 7, 160, 64, false)
		for name, runs := range map[string][]*Run{"one": {big}, "two": {rigid, big}} {
			if err := Plot(os.Getenv("VODA_PLOT_SAMPLE")+"-"+name+".png", runs); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestPlotEdgeCases(t *testing.T) {
	dir := t.TempDir()
	nothingDone := &Run{Algorithm: "stuck", GPUs: 4, EndTime: 100,
		Jobs:    []JobResult{{Name: "a", Submit: 0, Start: -1, End: -1}},
		Changes: nil}
	zeroJCT := &Run{Algorithm: "instant", GPUs: 2, Jobs: []JobResult{{Name: "a", Done: true}}}
	oneJob := &Run{Algorithm: "one", GPUs: 4, EndTime: 3600,
		Jobs:    []JobResult{{Name: "a", Start: 0, End: 3600, Done: true, GPUSeconds: 7200}},
		Changes: []Change{{Time: 0, Job: "a", GPUs: 2}, {Time: 3600, Job: "a", GPUs: 0}}}
	for _, tc := range []struct {
		name    string
		runs    []*Run
		wantErr string
	}{
		{name: "nothing done", runs: []*Run{nothingDone}},
		{name: "zero JCT", runs: []*Run{zeroJCT}},
		{name: "one job", runs: []*Run{oneJob}},
		{name: "mixed", runs: []*Run{nothingDone, zeroJCT, oneJob}},
		{name: "no runs", wantErr: "no runs"},
		{name: "nil run", runs: []*Run{nil}, wantErr: "nil"},
		{name: "bad change", runs: []*Run{{Changes: []Change{{Time: -1, Job: "a", GPUs: 1}}}}, wantErr: "change 0 (job a)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Plot(filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".svg"), tc.runs)
			if tc.wantErr == "" && err != nil {
				t.Fatal(err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
	if err := Plot(filepath.Join(dir, "x.gif"), []*Run{oneJob}); err == nil || !strings.Contains(err.Error(), ".svg, .png, .pdf, .jpg, .jpeg") {
		t.Errorf("unknown extension: error %v", err)
	}
}

func TestGPUStack(t *testing.T) {
	run := &Run{GPUs: 4, EndTime: 300, Changes: []Change{
		{Time: 0, Job: "a", GPUs: 2},
		{Time: 0, Job: "b", GPUs: 1},
		{Time: 100, Job: "a", GPUs: 0}, // b drops to the bottom
		{Time: 200, Job: "a", GPUs: 3},
		{Time: 250, Job: "c", GPUs: 0}, // never held GPUs: ignored
	}}
	s, err := newGPUStack(run)
	if err != nil {
		t.Fatal(err)
	}
	if s.peak != 4 || s.end != 300 {
		t.Errorf("peak %d end %v, want 4 and 300", s.peak, s.end)
	}
	// a [0,100) at 0..2; b [0,100) at 2..3 then [100,200) at 0..1, then
	// [200,300) at 3..4 above a again (a is first in the stack order);
	// a [200,300) at 0..3.
	if len(s.bands) != 3 {
		t.Fatalf("got %d bands, want 3: %+v", len(s.bands), s.bands)
	}
	var polys []int
	for _, b := range s.bands {
		polys = append(polys, len(b.pts))
	}
	if polys[0] != 4 || polys[1] != 4 || polys[2] != 12 {
		t.Errorf("band point counts %v, want [4 4 12] (a, a again, b with three steps)", polys)
	}
}

func TestRunLabel(t *testing.T) {
	greedy := &Run{Algorithm: "AFS-L", Placer: "greedy"}
	topology := &Run{Algorithm: "AFS-L", Placer: "topology"}
	fifo := &Run{Algorithm: "FIFO", Placer: "greedy"}
	for _, tc := range []struct {
		name string
		runs []*Run
		want []string
	}{
		{"one placer", []*Run{greedy, fifo}, []string{"AFS-L", "FIFO"}},
		{"two placers", []*Run{greedy, topology, fifo}, []string{"AFS-L (greedy)", "AFS-L (topology)", "FIFO (greedy)"}},
		{"unnamed", []*Run{{Placer: "greedy"}, {Placer: "topology"}}, []string{"run 1 (greedy)", "run 2 (topology)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			with := placersDiffer(tc.runs)
			var got []string
			for i, r := range tc.runs {
				got = append(got, runLabel(r, i, with))
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("labels = %q, want %q", got, tc.want)
			}
		})
	}
}
