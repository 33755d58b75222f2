package workload

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/vodascheduler/voda/internal/sim/perfmodel"
	"github.com/vodascheduler/voda/internal/sim/polluxdata"
)

// testConfigs gives each application distinct configurations, so a job's
// configuration tells which draw it came from.
var testConfigs = map[string][]PolluxConfig{
	"bert":        {{6, 384}, {8, 384}},
	"cifar10":     {{6, 2048}, {16, 4096}},
	"deepspeech2": {{6, 320}, {12, 640}},
	"imagenet":    {{24, 3200}},
	"ncf":         {{1, 32768}},
	"yolov3":      {{4, 64}},
}

// syntheticPhilly writes a trace with a row every 5 minutes of the day;
// the row's GPU time cycles through the four application classes, so a
// job's submission time tells its class. Rows that the filters must drop
// (too short, too large) sit on odd seconds.
func syntheticPhilly() (csv string, classOf map[int]string) {
	var b strings.Builder
	b.WriteString("timestamp,duration,num_gpus,gpu_time,cluster\n")
	classOf = map[int]string{}
	gpuHours := []float64{0.5, 5, 50, 500}
	classes := []string{"small", "medium", "large", "huge"}
	for i := 0; i < 24*12; i++ {
		tod := i * 300
		h, m := tod/3600, tod%3600/60
		c := i % 4
		fmt.Fprintf(&b, "2017-10-%02d %02d:%02d:00,%g,2,%g,abc\n", 3+i%5, h, m, gpuHours[c]*1800, gpuHours[c]*3600)
		// The same time of day shifted by Start=2 h is the job's submit.
		classOf[((tod-7200)%86400+86400)%86400] = classes[c]
		fmt.Fprintf(&b, "2017-10-03 %02d:%02d:01,59,1,59,abc\n", h, m)
		fmt.Fprintf(&b, "2017-10-03 %02d:%02d:03,4000000,1,3600000,abc\n", h, m)
	}
	return b.String(), classOf
}

func mustPhilly(t *testing.T, in string) []PhillyJob {
	t.Helper()
	rows, err := ReadPhilly(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func testOpts(seed uint64) PolluxGenOptions {
	o := DefaultPolluxGenOptions()
	o.Seed = seed
	o.Jobs = 40
	o.Configs = testConfigs
	return o
}

func TestGeneratePollux(t *testing.T) {
	in, classOf := syntheticPhilly()
	trace := mustPhilly(t, in)
	if len(trace) != 3*24*12 {
		t.Fatalf("read %d rows, want %d", len(trace), 3*24*12)
	}
	appsOf := map[string][]string{
		"small": {"cifar10", "ncf"}, "medium": {"deepspeech2", "bert"},
		"large": {"yolov3"}, "huge": {"imagenet"},
	}
	for _, tc := range []struct {
		name  string
		mod   func(*PolluxGenOptions)
		jobs  int
		hours int
	}{
		{"defaults", func(*PolluxGenOptions) {}, 40, 8},
		{"160 jobs", func(o *PolluxGenOptions) { o.Jobs = 80; o.Load = 2 }, 160, 16},
		{"whole day", func(o *PolluxGenOptions) { o.Hours = 24 }, 40, 24},
		{"half load", func(o *PolluxGenOptions) { o.Load = 0.5 }, 20, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := testOpts(7)
			o.Hours = tc.hours
			tc.mod(&o)
			jobs, err := GeneratePollux(trace, o)
			if err != nil {
				t.Fatal(err)
			}
			if len(jobs) != tc.jobs {
				t.Fatalf("%d jobs, want %d", len(jobs), tc.jobs)
			}
			checkJobs(t, jobs)
			seen := map[float64]bool{}
			for i, j := range jobs {
				if j.Submit < 0 || j.Submit >= float64(o.Hours*3600) || j.Submit != float64(int(j.Submit)) {
					t.Errorf("%s: submit %v outside [0, %d) or not whole", j.Name, j.Submit, o.Hours*3600)
				}
				if seen[j.Submit] {
					t.Errorf("%s: a trace row drawn twice (time %v)", j.Name, j.Submit)
				}
				seen[j.Submit] = true
				class, ok := classOf[int(j.Submit)]
				if !ok {
					t.Fatalf("%s: time %v is not a kept trace row (a filtered row was drawn)", j.Name, j.Submit)
				}
				if !slices.Contains(appsOf[class], j.App) {
					t.Errorf("%s: a %s GPU-time row became %s, want one of %v", j.Name, class, j.App, appsOf[class])
				}
				if !slices.Contains(testConfigs[j.App], PolluxConfig{j.Requested, j.BatchSize}) {
					t.Errorf("%s: configuration (%d, %d) is not one of %s's", j.Name, j.Requested, j.BatchSize, j.App)
				}
				if j.MinWorkers != 1 || j.MaxWorkers != j.Requested || !j.WidenMax {
					t.Errorf("%s: workers %d-%d (requested %d), widen %v; want as ReadPollux gives", j.Name, j.MinWorkers, j.MaxWorkers, j.Requested, j.WidenMax)
				}
				if idx := fmt.Sprintf("-%d", i); !strings.HasSuffix(j.Name, idx) && !sameTimeNeighbour(jobs, i) {
					t.Errorf("job %d is named %s", i, j.Name)
				}
			}
		})
	}
}

// sameTimeNeighbour reports whether job i shares its time with another,
// when name order may differ from index order.
func sameTimeNeighbour(jobs []Job, i int) bool {
	return (i > 0 && jobs[i-1].Submit == jobs[i].Submit) || (i+1 < len(jobs) && jobs[i+1].Submit == jobs[i].Submit)
}

func TestGeneratePolluxSeeds(t *testing.T) {
	in, _ := syntheticPhilly()
	trace := mustPhilly(t, in)
	gen := func(o PolluxGenOptions) []Job {
		t.Helper()
		jobs, err := GeneratePollux(trace, o)
		if err != nil {
			t.Fatal(err)
		}
		return jobs
	}
	a, b := gen(testOpts(1)), gen(testOpts(1))
	if !reflect.DeepEqual(a, b) {
		t.Error("the same seed gave different workloads")
	}
	if c := gen(testOpts(2)); reflect.DeepEqual(a, c) {
		t.Error("seeds 1 and 2 gave the same workload")
	}
	// A higher load keeps the lower load's jobs, as the artifact's 2.0x
	// workloads keep its 1.0x ones.
	o := testOpts(1)
	o.Load = 2
	double := gen(o)
	key := func(j Job) string { return fmt.Sprint(j.Submit, j.App, j.Requested, j.BatchSize) }
	have := map[string]bool{}
	for _, j := range double {
		have[key(j)] = true
	}
	for _, j := range a {
		if !have[key(j)] {
			t.Errorf("load 2 lost the load-1 job %+v", j)
		}
	}
	// The trace's order does not matter beyond the draw: shuffling the
	// rows changes the workload but keeps it valid.
	rev := slices.Clone(trace)
	slices.Reverse(rev)
	r, err := GeneratePollux(rev, testOpts(1))
	if err != nil || len(r) != len(a) {
		t.Fatalf("reversed trace: %d jobs, %v", len(r), err)
	}
}

func TestGeneratePolluxErrors(t *testing.T) {
	in, _ := syntheticPhilly()
	trace := mustPhilly(t, in)
	noBert := map[string][]PolluxConfig{}
	for k, v := range testConfigs {
		if k != "bert" {
			noBert[k] = v
		}
	}
	for _, tc := range []struct {
		name string
		mod  func(*PolluxGenOptions)
		want string
	}{
		{"no jobs", func(o *PolluxGenOptions) { o.Jobs = 0 }, "jobs 0"},
		{"negative load", func(o *PolluxGenOptions) { o.Load = -1 }, "load -1"},
		{"tiny load", func(o *PolluxGenOptions) { o.Load = 0.001 }, "rounds to none"},
		{"bad start", func(o *PolluxGenOptions) { o.Start = 24 }, "start 24"},
		{"bad hours", func(o *PolluxGenOptions) { o.Hours = 0 }, "hours 0"},
		{"missing app", func(o *PolluxGenOptions) { o.Configs = noBert }, "no configurations for bert"},
		{"bad config", func(o *PolluxGenOptions) {
			o.Configs = map[string][]PolluxConfig{}
			for k := range testConfigs {
				o.Configs[k] = []PolluxConfig{{0, 64}}
			}
		}, "at least 1"},
		{"too few rows", func(o *PolluxGenOptions) { o.Jobs = 97 }, "only 96 trace rows"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := testOpts(1)
			tc.mod(&o)
			_, err := GeneratePollux(trace, o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestReadPhilly(t *testing.T) {
	const hdr = "timestamp,duration,num_gpus,gpu_time,cluster\n"
	rows := mustPhilly(t, hdr+"2017-10-09 07:01:55,66.0,1,66.0,11cb48\n\n2017-10-09T23:59:59,1e3,8,8e3,x\n")
	if len(rows) != 2 || rows[0].Line != 2 || rows[1].Line != 4 || rows[1].GPUs != 8 || rows[1].GPUTime != 8000 ||
		rows[0].Submit.Hour() != 7 || rows[0].Submit.Second() != 55 {
		t.Errorf("rows %+v", rows)
	}
	for _, tc := range []struct {
		name, in   string
		line       int
		field, msg string
	}{
		{"empty", "", 1, "", "missing header"},
		{"missing column", "timestamp,duration,num_gpus\n", 1, "gpu_time", "missing column"},
		{"no rows", hdr, 1, "", "no jobs"},
		{"bad time", hdr + "2017-10-09 07:01:55,66,1,66,a\n2017-10-09 7h,66,1,66,a\n", 3, "timestamp", "not a time"},
		{"negative duration", hdr + "2017-10-09 07:01:55,-1,1,66,a\n", 2, "duration", "negative"},
		{"bad gpu time", hdr + "2017-10-09 07:01:55,1,1,NaN,a\n", 2, "gpu_time", "finite"},
		{"fractional gpus", hdr + "2017-10-09 07:01:55,1,1.5,1,a\n", 2, "num_gpus", "whole number"},
		{"short row", hdr + "2017-10-09 07:01:55,1,1\n", 2, "", "3 fields"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadPhilly(strings.NewReader(tc.in))
			var le *LineError
			if !errors.As(err, &le) {
				t.Fatalf("error %v, want a LineError", err)
			}
			if le.Line != tc.line || le.Field != tc.field || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q (line %d, field %q), want line %d, field %q, containing %q", err, le.Line, le.Field, tc.line, tc.field, tc.msg)
			}
		})
	}
}

func TestWritePolluxRoundTrip(t *testing.T) {
	in, _ := syntheticPhilly()
	jobs, err := GeneratePollux(mustPhilly(t, in), testOpts(3))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WritePollux(&buf, jobs); err != nil {
		t.Fatal(err)
	}
	back, err := ReadPollux(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, jobs) {
		t.Errorf("read back differs:\n%+v\n%+v", back, jobs)
	}
	if err := WritePollux(&buf, []Job{{Name: "x"}}); err == nil {
		t.Error("a job without replicas was written")
	}
}

// TestGeneratePolluxArtifactMix generates eight workloads from the real
// trace and configurations and compares their application mix with the
// artifact's eight 1.0x workloads.
func TestGeneratePolluxArtifactMix(t *testing.T) {
	dir := polluxdata.Dir(t)
	f, err := os.Open(filepath.Join(dir, "traces", "philly.csv"))
	if err != nil {
		t.Skipf("no Philly trace: %v; %s", err, polluxdata.Hint)
	}
	defer f.Close()
	trace, err := ReadPhilly(f)
	if err != nil {
		t.Fatal(err)
	}
	apps, err := perfmodel.LoadPolluxDir(filepath.Join(dir, "traces"))
	if err != nil {
		t.Fatal(err)
	}
	o := DefaultPolluxGenOptions()
	o.Configs = map[string][]PolluxConfig{}
	for _, a := range apps {
		cs, err := a.Configurations(0.5, 0.8)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			o.Configs[a.Name()] = append(o.Configs[a.Name()], PolluxConfig{c.Replicas, c.Batch})
		}
	}
	ours, theirs := map[string]int{}, map[string]int{}
	for seed := uint64(1); seed <= 8; seed++ {
		o.Seed = seed
		jobs, err := GeneratePollux(trace, o)
		if err != nil {
			t.Fatal(err)
		}
		if len(jobs) != 160 {
			t.Fatalf("seed %d: %d jobs", seed, len(jobs))
		}
		checkJobs(t, jobs)
		for _, j := range jobs {
			ours[j.App]++
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "workloads", "workload-*.csv"))
	if len(files) != 8 {
		t.Skipf("want the artifact's eight 1.0x workloads in %s/workloads; %s", dir, polluxdata.Hint)
	}
	for _, p := range files {
		jobs, err := Read(p, FormatPollux, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range jobs {
			theirs[j.App]++
		}
	}
	t.Logf("jobs per application in 8 workloads: generated %v, artifact %v", ours, theirs)
	// 1280 jobs each: a binomial standard deviation is at most about 18
	// jobs, so 5 sigma (plus the sampling noise of the artifact's own
	// draw) is a generous bound that still catches a wrong rule.
	for _, app := range PolluxGenApps() {
		if d := ours[app] - theirs[app]; d > 130 || d < -130 {
			t.Errorf("%s: %d generated jobs, the artifact has %d", app, ours[app], theirs[app])
		}
	}
}
