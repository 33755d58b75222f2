package service

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/store"
)

// A job's team is its record's namespace (else the service's default
// namespace); the stored quotas divide the GPUs among teams, and the
// scheduler's status says what each team holds, is entitled to and wants.
func TestStoredQuotasDivideTheGPUs(t *testing.T) {
	h := newHarness(t, 4, 4) // 16 GPUs
	set := store.Settings{Quotas: []model.Quota{{Team: "team-a", Guarantee: 8, Weight: 1}, {Team: "team-b", Guarantee: 8, Weight: 1}}}
	if err := h.st.PutSettings(context.Background(), gpuType, set); err != nil {
		t.Fatal(err)
	}
	h.run()
	put := func(name, ns string, minW, maxW int) {
		h.put(store.Job{Name: name, Kind: "MPIJob", Namespace: ns, Spec: jobSpec(name, minW, maxW),
			Status: store.JobStatus{State: model.JobState{Status: model.StatusSubmitted}, Est: model.Estimates{RemainingSeconds: -1}}})
		h.notify(name)
	}
	gpus := func(name string) int { return h.get(name).Status.State.GPUs }

	put("a1", "team-a", 1, 16)
	waitFor(t, "a1 borrows all 16 GPUs", func() bool { return gpus("a1") == 16 })
	put("b1", "team-b", 1, 8)
	waitFor(t, "b1 gets team-b's guarantee and a1 shrinks to team-a's", func() bool { return gpus("b1") == 8 && gpus("a1") == 8 })

	want := []store.TeamState{
		{Team: "team-a", GPUs: 8, Entitled: 8, Demand: 16, Running: 1},
		{Team: "team-b", GPUs: 8, Entitled: 8, Demand: 8, Running: 1},
	}
	var got []store.TeamState
	waitFor(t, "the status's teams", func() bool {
		if err := h.svc.resync(context.Background()); err != nil {
			t.Fatal(err)
		}
		rec, err := h.st.GetScheduler(context.Background(), gpuType)
		if err != nil {
			t.Fatal(err)
		}
		got = rec.Status.Teams
		return cmp.Equal(want, got)
	})
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("teams (-want,+got):\n%s", diff)
	}
	for _, team := range []string{"team-a", "team-b"} {
		if g, e := testutil.ToFloat64(h.m.TeamGPUsInUse.WithLabelValues(gpuType, team)), testutil.ToFloat64(h.m.TeamEntitled.WithLabelValues(gpuType, team)); g != 8 || e != 8 {
			t.Errorf("team %s series: %v GPUs in use, %v entitled; want 8 and 8", team, g, e)
		}
	}
}

// A job whose minimum exceeds its team's limit can never start: its
// status says so, naming the team and the limit.
func TestMinimumOverTheTeamLimitIsUnschedulable(t *testing.T) {
	h := newHarness(t, 4, 4)
	set := store.Settings{Quotas: []model.Quota{{Team: "team-b", Limit: 8, Weight: 1}}}
	if err := h.st.PutSettings(context.Background(), gpuType, set); err != nil {
		t.Fatal(err)
	}
	h.run()
	h.put(store.Job{Name: "big", Kind: "MPIJob", Namespace: "team-b", Spec: jobSpec("big", 12, 12),
		Status: store.JobStatus{State: model.JobState{Status: model.StatusSubmitted}, Est: model.Estimates{RemainingSeconds: -1}}})
	h.notify("big")
	var j store.Job
	waitFor(t, "big unschedulable", func() bool {
		if err := h.svc.resync(context.Background()); err != nil {
			t.Fatal(err)
		}
		j = h.get("big")
		return j.Status.Reason == store.ReasonUnschedulable
	})
	if want := "team team-b may hold at most 8"; !strings.Contains(j.Status.Message, want) {
		t.Errorf("message %q, want it to say %q", j.Status.Message, want)
	}
	if j.Status.State.GPUs != 0 {
		t.Errorf("big holds %d GPUs beyond its team's limit", j.Status.State.GPUs)
	}
}
