package report

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestPercentile(t *testing.T) {
	xs := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, tc := range []struct {
		xs   []float64
		p    float64
		want float64
	}{
		{xs, 50, 5},   // ceil(5) = rank 5
		{xs, 99, 10},  // ceil(9.9) = rank 10
		{xs, 10, 1},   // rank 1
		{xs, 11, 2},   // ceil(1.1) = rank 2
		{xs, 100, 10}, // the maximum
		{xs, 0, 1},    // rank clamped to 1
		{[]float64{7}, 50, 7},
		{nil, 50, 0},
	} {
		if got := Percentile(tc.xs, tc.p); got != tc.want {
			t.Errorf("Percentile(%v, %v) = %v, want %v", tc.xs, tc.p, got, tc.want)
		}
	}
}

func TestSummarize(t *testing.T) {
	threeJobs := &Run{
		Algorithm: "tiresias", Workload: "w1", GPUs: 4, WallSeconds: 2.5, EndTime: 1000,
		Jobs: []JobResult{
			// JCT 100, queue 10.
			{Name: "a", Submit: 0, Start: 10, End: 100, Done: true, Restarts: 1, Migrations: 2, GPUSeconds: 360},
			// JCT 300, queue 50.
			{Name: "b", Submit: 100, Start: 150, End: 400, Done: true, Restarts: 3, GPUSeconds: 500},
			// Started, unfinished: queue 0, counts in GPU-seconds only.
			{Name: "c", Submit: 200, Start: 200, End: -1, GPUSeconds: 100},
			// Never started.
			{Name: "d", Submit: 300, Start: -1, End: -1},
		},
	}
	for _, tc := range []struct {
		name string
		run  *Run
		want Summary
	}{
		{
			name: "mixed",
			run:  threeJobs,
			want: Summary{
				Algorithm: "tiresias", Workload: "w1", GPUs: 4, Jobs: 4, Completed: 2,
				AvgJCT: 200, P50JCT: 100, P99JCT: 300, MaxJCT: 300,
				Makespan:       400,          // 400 - 0
				AvgQueue:       20,           // (10 + 50 + 0) / 3
				GPUUtilization: 960.0 / 1600, // (360+500+100) / (4*400)
				Restarts:       4, Migrations: 2, AvgRestartsPerJob: 1, MigrationsPerJob: 0.5, WallSeconds: 2.5,
			},
		},
		{
			name: "placement metrics",
			run: &Run{
				Algorithm: "afs-l", Placer: "topology", GPUs: 8,
				Cycles: 4, SpreadJobCycles: 6, PlaceTotal: 10 * time.Millisecond, PlaceMax: 7500 * time.Microsecond,
				Jobs: []JobResult{
					{Name: "a", Submit: 0, Start: 0, End: 100, Done: true, Restarts: 2, Migrations: 5, GPUSeconds: 400},
					{Name: "b", Submit: 0, Start: 0, End: 100, Done: true, Migrations: 1, GPUSeconds: 400},
				},
			},
			want: Summary{
				Algorithm: "afs-l", Placer: "topology", GPUs: 8, Jobs: 2, Completed: 2,
				AvgJCT: 100, P50JCT: 100, P99JCT: 100, MaxJCT: 100, Makespan: 100, GPUUtilization: 1,
				Restarts: 2, Migrations: 6, AvgRestartsPerJob: 1, MigrationsPerJob: 3,
				Cycles: 4, AvgSpreadJobs: 1.5, PlaceMsAvg: 2.5, PlaceMsMax: 7.5,
			},
		},
		{
			name: "no cycles",
			run: &Run{Algorithm: "x", Placer: "greedy", GPUs: 1, PlaceMax: time.Millisecond, Jobs: []JobResult{
				{Name: "a", Submit: 0, Start: -1, End: -1, Migrations: 3},
			}},
			want: Summary{Algorithm: "x", Placer: "greedy", GPUs: 1, Jobs: 1, Migrations: 3, MigrationsPerJob: 3, PlaceMsMax: 1},
		},
		{
			name: "one job",
			run: &Run{Algorithm: "x", GPUs: 2, Jobs: []JobResult{
				{Name: "a", Submit: 50, Start: 60, End: 150, Done: true, GPUSeconds: 180},
			}},
			want: Summary{Algorithm: "x", GPUs: 2, Jobs: 1, Completed: 1,
				AvgJCT: 100, P50JCT: 100, P99JCT: 100, MaxJCT: 100, Makespan: 100, AvgQueue: 10,
				GPUUtilization: 0.9},
		},
		{
			name: "no completed jobs",
			run: &Run{Algorithm: "stuck", GPUs: 8, Jobs: []JobResult{
				{Name: "a", Submit: 0, Start: 5, End: -1, GPUSeconds: 1e6, Restarts: 2},
				{Name: "b", Submit: 0, Start: -1, End: -1},
			}},
			want: Summary{Algorithm: "stuck", GPUs: 8, Jobs: 2, AvgQueue: 5, Restarts: 2, AvgRestartsPerJob: 1},
		},
		{
			name: "utilization clamped",
			run: &Run{GPUs: 1, Jobs: []JobResult{
				{Name: "a", Submit: 0, Start: 0, End: 10, Done: true, GPUSeconds: 50},
			}},
			want: Summary{GPUs: 1, Jobs: 1, Completed: 1, AvgJCT: 10, P50JCT: 10, P99JCT: 10, MaxJCT: 10,
				Makespan: 10, GPUUtilization: 1},
		},
		{name: "empty run", run: &Run{Algorithm: "none"}, want: Summary{Algorithm: "none"}},
		{name: "nil run", run: nil, want: Summary{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Summarize(tc.run)
			// TestAppShares checks the breakdown by application.
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateApprox(0, 1e-12), cmpopts.IgnoreFields(Summary{}, "Apps")); diff != "" {
				t.Errorf("Summarize (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestAppShares(t *testing.T) {
	run := &Run{Jobs: []JobResult{
		{Name: "y1", App: "yolov3", Submit: 0, End: 300, Done: true},
		{Name: "c1", App: "cifar10", Submit: 0, End: 100, Done: true},
		{Name: "c2", App: "cifar10", Submit: 50, End: 250, Done: true},
		{Name: "c3", App: "cifar10", Submit: 0, End: -1},
	}}
	s := Summarize(run)
	want := []AppShare{
		{App: "cifar10", Completed: 2, AvgJCT: 150, Contribution: 100},
		{App: "yolov3", Completed: 1, AvgJCT: 300, Contribution: 100},
	}
	if diff := cmp.Diff(want, s.Apps, cmpopts.EquateApprox(0, 1e-12)); diff != "" {
		t.Fatalf("Apps (-want,+got):\n%s", diff)
	}
	sum := 0.0
	for _, a := range s.Apps {
		sum += a.Contribution
	}
	if math.Abs(sum-s.AvgJCT) > 1e-9 {
		t.Errorf("contributions add up to %g, avg JCT %g", sum, s.AvgJCT)
	}
	other := Summarize(&Run{Jobs: []JobResult{{Name: "b", App: "bert", Submit: 0, End: 40, Done: true}}})
	other.Estimator = []EstimatorError{{App: "bert", NewPlacements: 3, NewPlacementMeanErr: 0.1, NewPlacementMaxErr: 0.2}}
	s.Estimator = []EstimatorError{{App: "bert", NewPlacements: 1, NewPlacementMeanErr: 0.5, NewPlacementMaxErr: 0.5, NewBatches: 2, NewBatchMeanErr: 0.01, NewBatchMaxErr: 0.02}}
	m := MeanOverWorkloads([][]Summary{{s}, {other}})[0]
	wantApps := []AppShare{
		{App: "bert", Completed: 1, AvgJCT: 40, Contribution: 20},
		{App: "cifar10", Completed: 2, AvgJCT: 150, Contribution: 50},
		{App: "yolov3", Completed: 1, AvgJCT: 300, Contribution: 50},
	}
	if diff := cmp.Diff(wantApps, m.Apps, cmpopts.EquateApprox(0, 1e-12)); diff != "" {
		t.Errorf("mean Apps (-want,+got):\n%s", diff)
	}
	wantEst := []EstimatorError{{App: "bert", NewPlacements: 4, NewPlacementMeanErr: 0.2, NewPlacementMaxErr: 0.5, NewBatches: 2, NewBatchMeanErr: 0.01, NewBatchMaxErr: 0.02}}
	if diff := cmp.Diff(wantEst, m.Estimator, cmpopts.EquateApprox(0, 1e-12)); diff != "" {
		t.Errorf("mean Estimator (-want,+got):\n%s", diff)
	}
}

func TestMeanOverWorkloads(t *testing.T) {
	rows := [][]Summary{
		{
			{Algorithm: "FIFO", Placer: "greedy", Workload: "a", GPUs: 8, Jobs: 3, Completed: 3, AvgJCT: 100, MaxJCT: 300,
				Restarts: 2, AvgRestartsPerJob: 2.0 / 3, Cycles: 10, PlaceMsAvg: 1, PlaceMsMax: 4, WallSeconds: 1},
			{Algorithm: "AFS-L", Placer: "greedy", Workload: "a", GPUs: 8, Jobs: 3, Completed: 2, AvgJCT: 50, GPUUtilization: 0.5},
		},
		{
			{Algorithm: "FIFO", Placer: "greedy", Workload: "b", GPUs: 8, Jobs: 5, Completed: 4, AvgJCT: 200, MaxJCT: 250,
				Restarts: 4, AvgRestartsPerJob: 4.0 / 5, Cycles: 30, PlaceMsAvg: 3, PlaceMsMax: 2, WallSeconds: 2},
			{Algorithm: "AFS-L", Placer: "greedy", Workload: "b", GPUs: 8, Jobs: 5, Completed: 5, AvgJCT: 70, GPUUtilization: 0.7},
		},
	}
	want := []Summary{
		{Algorithm: "FIFO", Placer: "greedy", Workload: "mean of 2", GPUs: 8, Jobs: 8, Completed: 7, AvgJCT: 150, MaxJCT: 300,
			Restarts: 6, AvgRestartsPerJob: (2.0/3 + 4.0/5) / 2, Cycles: 40, PlaceMsAvg: 2, PlaceMsMax: 4, WallSeconds: 3},
		{Algorithm: "AFS-L", Placer: "greedy", Workload: "mean of 2", GPUs: 8, Jobs: 8, Completed: 7, AvgJCT: 60, GPUUtilization: 0.6},
	}
	if diff := cmp.Diff(want, MeanOverWorkloads(rows), cmpopts.EquateApprox(0, 1e-12)); diff != "" {
		t.Errorf("MeanOverWorkloads (-want,+got):\n%s", diff)
	}
	if got := MeanOverWorkloads(nil); got != nil {
		t.Errorf("no workloads: %v, want nil", got)
	}
}

func TestWriteText(t *testing.T) {
	s := Summary{Algorithm: "tiresias", Placer: "topology", Workload: "workload-1.csv", GPUs: 64, Jobs: 160, Completed: 160,
		AvgJCT: 4038.2, P50JCT: 1800, P99JCT: 36000, MaxJCT: 40000, Makespan: 90000, AvgQueue: 600,
		GPUUtilization: 0.713, Restarts: 123, AvgRestartsPerJob: 123.0 / 160, Migrations: 10, MigrationsPerJob: 10.0 / 160,
		Cycles: 1500, AvgSpreadJobs: 1.234, PlaceMsAvg: 0.0456, PlaceMsMax: 2.5, WallSeconds: 12.34}
	var buf bytes.Buffer
	if err := WriteText(&buf, s); err != nil {
		t.Fatal(err)
	}
	want := `algorithm    tiresias
placer       topology
workload     workload-1.csv
cluster      64 GPUs
jobs         160 (160 completed)
avg JCT      4038.2 s (1.12 h)
p50 JCT      1800.0 s (0.50 h)
p99 JCT      36000.0 s (10.00 h)
max JCT      40000.0 s (11.11 h)
makespan     90000.0 s (25.00 h)
avg queue    600.0 s (0.17 h)
GPU util     71.3 %
restarts     123 (0.77 per job)
migrations   10 (0.06 per job)
cycles       1500
spread       1.23 jobs per cycle on more nodes than needed
placement    0.046 ms per cycle (max 2.500 ms)
wall         12.3 s
`
	if diff := cmp.Diff(want, buf.String()); diff != "" {
		t.Errorf("text (-want,+got):\n%s", diff)
	}
}

func TestWriteComparison(t *testing.T) {
	tests := []struct {
		name string
		sums []Summary
		want string
	}{
		{
			name: "algorithms",
			sums: []Summary{
				{Algorithm: "tiresias", Placer: "greedy", Jobs: 160, Completed: 160, AvgJCT: 4038.25, P50JCT: 1200, P99JCT: 36000.5,
					Makespan: 90000, AvgQueue: 1500, GPUUtilization: 0.7134, Restarts: 12, AvgRestartsPerJob: 12.0 / 160,
					Migrations: 3, MigrationsPerJob: 3.0 / 160, AvgSpreadJobs: 0.5, WallSeconds: 12.3},
				{Algorithm: "voda-elastic", Placer: "greedy", Jobs: 160, Completed: 158, AvgJCT: 2750, P50JCT: 900, P99JCT: 20000,
					Makespan: 80000, AvgQueue: 20, GPUUtilization: 0.9, Restarts: 1234, AvgRestartsPerJob: 1234.0 / 160,
					Migrations: 56, MigrationsPerJob: 56.0 / 160, AvgSpreadJobs: 12.345, WallSeconds: 130},
			},
			want: `algorithm     placer     done  avg JCT s  p50 JCT s  p99 JCT s  makespan s  avg queue s  util %  restarts/job  migrations/job  spread  wall s
tiresias      greedy  160/160     4038.2     1200.0    36000.5     90000.0       1500.0    71.3          0.07            0.02    0.50    12.3
voda-elastic  greedy  158/160     2750.0      900.0    20000.0     80000.0         20.0    90.0          7.71            0.35   12.35   130.0
`,
		},
		{
			name: "placers",
			sums: []Summary{
				{Algorithm: "AFS-L", Placer: "greedy", Jobs: 2, Completed: 2, AvgJCT: 10, AvgRestartsPerJob: 1.5, MigrationsPerJob: 4, AvgSpreadJobs: 1},
				{Algorithm: "AFS-L", Placer: "topology", Jobs: 2, Completed: 2, AvgJCT: 9, AvgRestartsPerJob: 1.5, AvgSpreadJobs: 0.25},
			},
			want: `algorithm  placer    done  avg JCT s  p50 JCT s  p99 JCT s  makespan s  avg queue s  util %  restarts/job  migrations/job  spread  wall s
AFS-L      greedy     2/2       10.0        0.0        0.0         0.0          0.0     0.0          1.50            4.00    1.00     0.0
AFS-L      topology   2/2        9.0        0.0        0.0         0.0          0.0     0.0          1.50            0.00    0.25     0.0
`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteComparison(&buf, tc.sums); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, buf.String()); diff != "" {
				t.Errorf("table (-want,+got):\n%s", diff)
			}
		})
	}
	var empty bytes.Buffer
	if err := WriteComparison(&empty, nil); err != nil || strings.Count(empty.String(), "\n") != 1 {
		t.Errorf("no summaries: %q, %v; want the header alone", empty.String(), err)
	}
}

func TestWriteJobsCSV(t *testing.T) {
	run := &Run{Jobs: []JobResult{
		{Name: "a", App: "bert", Submit: 10, Start: 20.5, End: 110.25, Done: true,
			MinWorkers: 1, MaxWorkers: 8, Requested: 4, Restarts: 2, Migrations: 1, GPUSeconds: 1.0 / 3},
		{Name: "b,quoted", App: "ncf", Submit: 30, Start: 40, End: -1, MinWorkers: 1, MaxWorkers: 1, Requested: 1},
		{Name: "c", App: "ncf", Submit: 50, Start: -1, End: -1, MinWorkers: 2, MaxWorkers: 2, Requested: 2},
	}}
	var buf bytes.Buffer
	if err := WriteJobsCSV(&buf, run); err != nil {
		t.Fatal(err)
	}
	want := `name,app,submit_s,start_s,end_s,jct_s,queue_s,min_workers,max_workers,requested,restarts,migrations,gpu_seconds,done
a,bert,10,20.5,110.25,100.25,10.5,1,8,4,2,1,0.333,true
"b,quoted",ncf,30,40,,,10,1,1,1,0,0,0,false
c,ncf,50,,,,,2,2,2,0,0,0,false
`
	if diff := cmp.Diff(want, buf.String()); diff != "" {
		t.Errorf("csv (-want,+got):\n%s", diff)
	}
}

// A run's cluster shape reaches its summary, the text (a line after the
// GPUs) and the mean over workloads; without one the text has no line.
func TestSummaryClusterShape(t *testing.T) {
	run := &Run{Algorithm: "FIFO", GPUs: 64, Cluster: "4x8,8x4"}
	s := Summarize(run)
	if s.Cluster != "4x8,8x4" {
		t.Errorf("Summarize: cluster %q, want 4x8,8x4", s.Cluster)
	}
	if m := MeanOverWorkloads([][]Summary{{s}, {s}}); m[0].Cluster != "4x8,8x4" {
		t.Errorf("MeanOverWorkloads: cluster %q, want 4x8,8x4", m[0].Cluster)
	}
	for _, tc := range []struct {
		cluster, want string
	}{
		{"4x8,8x4", "cluster      64 GPUs\nnodes        4x8,8x4 (nodes x GPUs)\njobs"},
		{"", "cluster      64 GPUs\njobs"},
	} {
		s.Cluster = tc.cluster
		var buf bytes.Buffer
		if err := WriteText(&buf, s); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(buf.String(), tc.want) {
			t.Errorf("cluster %q: text does not hold %q:\n%s", tc.cluster, tc.want, buf.String())
		}
	}
}
