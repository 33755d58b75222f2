package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// A replica that stops leading a GPU type drops that type's state gauges,
// which the next leader exports, and keeps its counters and the other
// types' gauges; its leader gauge says 0 and its terms stay counted.
func TestLead(t *testing.T) {
	m := New(prometheus.NewRegistry())
	m.StandBy("v100")
	m.StandBy("a100")
	if got := testutil.ToFloat64(m.SchedulerLeader.WithLabelValues("v100")); got != 0 {
		t.Fatalf("standing by: leader %v, want 0", got)
	}
	for _, c := range []*prometheus.CounterVec{m.LeaderTerms, m.JobsSetAside, m.StoreWriteErrors} {
		if got := testutil.CollectAndCount(c); got != 2 {
			t.Fatalf("standing by: %d series of a counter, want 2 (at 0)", got)
		}
	}
	for _, gt := range []string{"v100", "a100"} {
		m.Lead(gt, true)
		m.JobsWaiting.WithLabelValues(gt).Set(3)
		m.JobWaitingSeconds.WithLabelValues(gt, "j-"+gt).Set(60)
		m.LastReschedule.WithLabelValues(gt).Set(1e9)
		m.Reschedules.WithLabelValues(gt).Inc()
	}
	m.Lead("v100", false)
	m.Lead("v100", true)
	m.Lead("v100", false)

	tests := []struct {
		name      string
		collector prometheus.Collector
		want      int
	}{
		{"jobs waiting", m.JobsWaiting, 1},
		{"job waiting seconds", m.JobWaitingSeconds, 1},
		{"last reschedule", m.LastReschedule, 1},
		{"reschedules (a counter)", m.Reschedules, 2},
		{"leader", m.SchedulerLeader, 2},
	}
	for _, tt := range tests {
		if got := testutil.CollectAndCount(tt.collector); got != tt.want {
			t.Errorf("%s: %d series after v100's terms ended, want %d", tt.name, got, tt.want)
		}
	}
	if got := testutil.ToFloat64(m.JobsWaiting.WithLabelValues("a100")); got != 3 {
		t.Errorf("a100's jobs waiting %v, want 3 (untouched)", got)
	}
	if got := testutil.ToFloat64(m.SchedulerLeader.WithLabelValues("v100")); got != 0 {
		t.Errorf("v100 leader %v after its term ended, want 0", got)
	}
	if got := testutil.ToFloat64(m.LeaderTerms.WithLabelValues("v100")); got != 2 {
		t.Errorf("v100 terms %v, want 2", got)
	}
}
