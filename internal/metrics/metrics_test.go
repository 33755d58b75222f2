package metrics

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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
		m.SetJob(m.JobWaitingSeconds, Job{GPUType: gt, Namespace: "team-a", Name: "j-" + gt}, 60)
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

// Per-job series carry gpu_type, namespace and job_name, and go with
// ForgetJob; with NoJobSeries none is set or registered, so the registry
// gathers no family of them.
func TestJobSeries(t *testing.T) {
	j := Job{GPUType: "v100", Namespace: "team-a", Name: "resnet-1"}
	tests := []struct {
		name       string
		opts       Options
		wantSeries int // of each per-job gauge after SetJob
	}{
		{"on by default", Options{}, 1},
		{"off", Options{NoJobSeries: true}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			m := NewWithOptions(reg, tt.opts)
			gauges := []*prometheus.GaugeVec{m.JobProgress, m.JobRemainingSeconds, m.JobThroughput, m.JobWaitingSeconds}
			for _, g := range gauges {
				m.SetJob(g, j, 0.5)
			}
			for _, g := range gauges {
				if got := testutil.CollectAndCount(g); got != tt.wantSeries {
					t.Errorf("%d series of a per-job gauge, want %d", got, tt.wantSeries)
				}
			}
			mfs, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			families := 0
			for _, mf := range mfs {
				if !strings.HasPrefix(mf.GetName(), "voda_job_") {
					continue
				}
				families++
				for _, s := range mf.GetMetric() {
					got := map[string]string{}
					for _, l := range s.GetLabel() {
						got[l.GetName()] = l.GetValue()
					}
					want := map[string]string{"gpu_type": j.GPUType, "namespace": j.Namespace, "job_name": j.Name}
					if diff := cmp.Diff(want, got); diff != "" {
						t.Errorf("%s labels (-want,+got):\n%s", mf.GetName(), diff)
					}
				}
			}
			if want := 4 * tt.wantSeries; families != want {
				t.Errorf("%d voda_job_ families gathered, want %d", families, want)
			}
			m.ForgetJob(j)
			for _, g := range gauges {
				if got := testutil.CollectAndCount(g); got != 0 {
					t.Errorf("%d series of a per-job gauge after ForgetJob, want 0", got)
				}
			}
		})
	}
}
