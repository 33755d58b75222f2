package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// teamRun is a run of two teams over 100 s: team-a held 8 GPUs for all of
// it, entitled to 4 for half of it and 8 for the other half; team-b
// held 2 of an entitlement of 4 for half of it, short all that time.
func teamRun() *Run {
	return &Run{
		Algorithm: "Goodput", Placer: "topology", GPUs: 16, EndTime: 100,
		Jobs: []JobResult{
			{Name: "a1", Team: "team-a", Submit: 0, End: 40, Done: true, AloneJCT: 20},
			{Name: "a2", Team: "team-a", Submit: 10, End: 40, Done: true, AloneJCT: 30},
			{Name: "b1", Team: "team-b", Submit: 50, End: 100, Done: true, AloneJCT: 10},
			{Name: "b2", Team: "team-b", Submit: 60, End: -1},
		},
		Teams: []TeamRecord{
			{Team: "team-a", Guarantee: 8, Weight: 1, HeldGPUSeconds: 800, EntitledGPUSeconds: 600, ActiveSeconds: 100},
			{Team: "team-b", Guarantee: 8, Weight: 1, HeldGPUSeconds: 100, EntitledGPUSeconds: 200, ActiveSeconds: 50, ShortSeconds: 50},
		},
		Reclaims: []Reclaim{{Team: "team-b", Start: 50, Running: 5, Seconds: 30, Resolved: true}, {Team: "team-b", Start: 90, Running: -1, Seconds: 10}},
	}
}

func TestSummarizeTeams(t *testing.T) {
	s := Summarize(teamRun())
	want := []TeamShare{
		{Team: "team-a", Jobs: 2, Completed: 2, Guarantee: 8, AvgJCT: 35, AvgGPUs: 8, AvgEntitled: 6, Share: 800.0 / 600,
			FTFMean: (2 + 1) / 2.0, FTFWorst: 2, HeldGPUSeconds: 800, EntitledGPUSeconds: 600, ActiveSeconds: 100, RunSeconds: 100, JCTSum: 70, FTFSum: 3},
		{Team: "team-b", Jobs: 2, Completed: 1, Guarantee: 8, AvgJCT: 50, AvgGPUs: 1, AvgEntitled: 2, Share: 0.5, ShortFraction: 1,
			FTFMean: 5, FTFWorst: 5, HeldGPUSeconds: 100, EntitledGPUSeconds: 200, ActiveSeconds: 50, ShortSeconds: 50, RunSeconds: 100, JCTSum: 50, FTFSum: 5},
	}
	if diff := cmp.Diff(want, s.Teams, cmpopts.EquateApprox(0, 1e-12)); diff != "" {
		t.Errorf("teams (-want,+got):\n%s", diff)
	}
	got := []float64{s.FTFMean, s.FTFWorst, float64(s.Reclaims), float64(s.Unreclaimed), s.ReclaimMax, s.ReclaimMean, s.ReclaimRunningMax, s.ReclaimRunningMean}
	// The open reclaim's job still waited: its running time is its length.
	if diff := cmp.Diff([]float64{8.0 / 3, 5, 2, 1, 30, 20, 10, 7.5}, got, cmpopts.EquateApprox(0, 1e-12)); diff != "" {
		t.Errorf("FTF mean, worst, reclaims, unreclaimed, max, mean, running max, mean (-want,+got):\n%s", diff)
	}
	if Summarize(&Run{Jobs: []JobResult{{Name: "x", Done: true, End: 1}}}).Teams != nil {
		t.Error("a run without teams has team shares")
	}
}

// TestMeanTeams checks that means over workloads pool the teams' time
// and jobs rather than average their ratios.
func TestMeanTeams(t *testing.T) {
	r1 := teamRun()
	r2 := teamRun()
	r2.EndTime = 300
	r2.Teams[1].HeldGPUSeconds, r2.Teams[1].EntitledGPUSeconds = 700, 800
	r2.Reclaims = r2.Reclaims[:1]
	m := MeanOverWorkloads([][]Summary{{Summarize(r1)}, {Summarize(r2)}})[0]
	b := m.Teams[1]
	if b.Share != 800.0/1000 || b.AvgGPUs != 800.0/400 || b.Completed != 2 || b.FTFMean != 5 {
		t.Errorf("team-b over two workloads: share %v avg GPUs %v completed %d FTF %v; want 0.8, 2, 2, 5", b.Share, b.AvgGPUs, b.Completed, b.FTFMean)
	}
	if m.Reclaims != 3 || m.Unreclaimed != 1 || m.ReclaimMean != 70.0/3 || m.ReclaimMax != 30 || m.ReclaimRunningMean != 20.0/3 {
		t.Errorf("reclaims %d (%d open), mean %v, max %v, running mean %v; want 3 (1), 23.3, 30, 6.7",
			m.Reclaims, m.Unreclaimed, m.ReclaimMean, m.ReclaimMax, m.ReclaimRunningMean)
	}
}

func TestWriteTeams(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteTeams(&buf, []Summary{Summarize(&Run{Algorithm: "FIFO"}), Summarize(teamRun())}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"team-a", "133.3", "team-b", "100.0", "all", "2.67", "5.00",
		"Goodput/topology: 2 reclaims: every job of the team running within 10.0 s (mean 7.5 s), the team at min(demand, guarantee) within 30.0 s (mean 20.0 s)",
		"1 still short at the end"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "FIFO") {
		t.Errorf("a summary without teams is written:\n%s", out)
	}
	buf.Reset()
	if err := WriteTeams(&buf, []Summary{Summarize(&Run{Algorithm: "FIFO"})}); err != nil || buf.Len() != 0 {
		t.Errorf("no teams: wrote %q, %v; want nothing", buf.String(), err)
	}
}
