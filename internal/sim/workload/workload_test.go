package workload

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/sim/polluxdata"
)

// readerCase is one input to a reader: want jobs, or an error containing
// wantErr.
type readerCase struct {
	name    string
	in      string
	want    []Job
	wantErr string
}

func runReaderCases(t *testing.T, cases []readerCase, read func(string) ([]Job, error)) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := read(tc.in)
			if tc.wantErr != "" {
				if err == nil {
					t.Fatalf("got no error, want one containing %q; jobs %+v", tc.wantErr, got)
				}
				if !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %q does not contain %q", err, tc.wantErr)
				}
				var le *LineError
				if !errors.As(err, &le) && !strings.Contains(err.Error(), "options") {
					t.Errorf("error %q is not a *LineError", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("jobs (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestReadPollux(t *testing.T) {
	const hdr = "name,time,application,num_replicas,batch_size\n"
	cases := []readerCase{
		{
			name: "sample sorted by time then name",
			in: hdr +
				"ncf-2,135,ncf,1,32768\n" +
				"cifar10-0,107,cifar10,6,2048\n" +
				"bert-9,107,bert,2,12\n",
			want: []Job{
				{Name: "bert-9", Submit: 107, App: "bert", MinWorkers: 1, MaxWorkers: 2, Requested: 2, BatchSize: 12, WidenMax: true},
				{Name: "cifar10-0", Submit: 107, App: "cifar10", MinWorkers: 1, MaxWorkers: 6, Requested: 6, BatchSize: 2048, WidenMax: true},
				{Name: "ncf-2", Submit: 135, App: "ncf", MinWorkers: 1, MaxWorkers: 1, Requested: 1, BatchSize: 32768, WidenMax: true},
			},
		},
		{
			name: "columns by name, extra ignored, float time, CRLF, spaces, BOM",
			in: "\ufeffbatch_size, Application ,extra,time,num_replicas,name\r\n" +
				"64, yolov3 ,x,12.5,4.0,yolov3-1\r\n",
			want: []Job{{Name: "yolov3-1", Submit: 12.5, App: "yolov3", MinWorkers: 1, MaxWorkers: 4, Requested: 4, BatchSize: 64, WidenMax: true}},
		},
		{name: "empty input", in: "", wantErr: "line 1: missing header"},
		{name: "header only", in: hdr, wantErr: "line 1: no jobs"},
		{name: "missing column", in: "name,time,application,batch_size\na,1,ncf,2\n", wantErr: "line 1: field num_replicas: missing column"},
		{name: "duplicate column", in: "name,time,time,application,num_replicas,batch_size\n", wantErr: "line 1: field time: duplicate column"},
		{name: "not a number", in: hdr + "a,soon,ncf,1,2\n", wantErr: `line 2: field time: "soon" is not a finite number`},
		{name: "NaN time", in: hdr + "a,NaN,ncf,1,2\n", wantErr: "line 2: field time:"},
		{name: "negative time", in: hdr + "a,-1,ncf,1,2\n", wantErr: "line 2: field time: -1 is negative"},
		{name: "zero replicas", in: hdr + "a,1,ncf,1,2\nb,1,ncf,0,2\n", wantErr: "line 3: field num_replicas: 0 is below the minimum 1"},
		{name: "fractional replicas", in: hdr + "a,1,ncf,1.5,2\n", wantErr: "line 2: field num_replicas: \"1.5\" is not a whole number"},
		{name: "negative batch", in: hdr + "a,1,ncf,1,-2\n", wantErr: "line 2: field batch_size:"},
		{name: "duplicate name", in: hdr + "a,1,ncf,1,2\na,2,ncf,1,2\n", wantErr: `line 3: field name: duplicate name "a" (first on line 2)`},
		{name: "empty name", in: hdr + ",1,ncf,1,2\n", wantErr: "line 2: field name: empty"},
		{name: "empty app", in: hdr + "a,1,,1,2\n", wantErr: "line 2: field application: empty"},
		{name: "wrong field count", in: hdr + "a,1,ncf,1\n", wantErr: "line 2: has 4 fields, the header has 5"},
		{name: "bad quoting", in: hdr + "a,1,\"ncf,1,2\n", wantErr: "line 2:"},
		{
			name: "team column, empty is the default team",
			in:   "name,time,application,num_replicas,batch_size,team\nb,2,ncf,1,2,\na,1,ncf,1,2,team-1\n",
			want: []Job{
				{Name: "a", Submit: 1, App: "ncf", MinWorkers: 1, MaxWorkers: 1, Requested: 1, BatchSize: 2, WidenMax: true, Team: "team-1"},
				{Name: "b", Submit: 2, App: "ncf", MinWorkers: 1, MaxWorkers: 1, Requested: 1, BatchSize: 2, WidenMax: true},
			},
		},
		{name: "bad team", in: "name,time,application,num_replicas,batch_size,team\na,1,ncf,1,2,Team_A\n", wantErr: `line 2: field team: team "Team_A": want a namespace name`},
	}
	runReaderCases(t, cases, func(s string) ([]Job, error) { return ReadPollux(strings.NewReader(s)) })
}

func TestReadVoda(t *testing.T) {
	cases := []readerCase{
		{
			name: "defaults and comments",
			in: "# a comment\n" +
				"name,submit,app\n" +
				"# another\n" +
				"b,10,bert\n" +
				"a,10,ncf\n",
			want: []Job{
				{Name: "a", Submit: 10, App: "ncf", MinWorkers: 1, MaxWorkers: 1, Requested: 1},
				{Name: "b", Submit: 10, App: "bert", MinWorkers: 1, MaxWorkers: 1, Requested: 1},
			},
		},
		{
			name: "all columns, empty cells are unset",
			in: "name,submit,app,min_workers,max_workers,requested_workers,priority,epochs,duration,batch_size\n" +
				"full.job-1,0.5,resnet50,2,16,4,3,,3600.25,256\n" +
				"minonly,1,bert,4,,,,7,,\n" +
				"reqonly,2,bert,,,4,,,,\n" +
				"maxonly,3,bert,,8,,,,,\n",
			want: []Job{
				{Name: "full.job-1", Submit: 0.5, App: "resnet50", MinWorkers: 2, MaxWorkers: 16, Requested: 4, Priority: 3, Duration: 3600.25, BatchSize: 256},
				{Name: "minonly", Submit: 1, App: "bert", MinWorkers: 4, MaxWorkers: 4, Requested: 4, Epochs: 7},
				{Name: "reqonly", Submit: 2, App: "bert", MinWorkers: 1, MaxWorkers: 4, Requested: 4},
				{Name: "maxonly", Submit: 3, App: "bert", MinWorkers: 1, MaxWorkers: 8, Requested: 1},
			},
		},
		{name: "empty", in: "", wantErr: "line 1: missing header"},
		{name: "only comments", in: "# nothing\n", wantErr: "line 1: missing header"},
		{name: "header only", in: "# c\nname,submit,app\n", wantErr: "line 2: no jobs"},
		{name: "missing column", in: "name,app\na,ncf\n", wantErr: "line 1: field submit: missing column"},
		{name: "unknown column", in: "name,submit,app,max_worker\na,1,ncf,2\n", wantErr: "line 1: field max_worker: unknown column"},
		{name: "not a number", in: "name,submit,app,min_workers\na,1,ncf,two\n", wantErr: `line 2: field min_workers: "two" is not an integer`},
		{name: "negative submit", in: "name,submit,app\na,-5,ncf\n", wantErr: "line 2: field submit: -5 is negative"},
		{name: "negative priority", in: "name,submit,app,priority\na,1,ncf,-1\n", wantErr: "line 2: field priority: -1 is below the minimum 0"},
		{name: "zero min", in: "name,submit,app,min_workers\na,1,ncf,0\n", wantErr: "line 2: field min_workers: 0 is below the minimum 1"},
		{name: "min above max", in: "name,submit,app,min_workers,max_workers\na,1,ncf,4,2\n", wantErr: "line 2: field max_workers: 2 is below requested_workers 4"},
		{name: "requested below min", in: "name,submit,app,min_workers,requested_workers\na,1,ncf,4,2\n", wantErr: "line 2: field requested_workers: 2 is below min_workers 4"},
		{name: "requested above max", in: "name,submit,app,requested_workers,max_workers\na,1,ncf,8,4\n", wantErr: "line 2: field max_workers: 4 is below requested_workers 8"},
		{name: "epochs and duration", in: "name,submit,app,epochs,duration\na,1,ncf,3,60\n", wantErr: "line 2: field duration: set together with epochs"},
		{name: "zero duration", in: "name,submit,app,duration\na,1,ncf,0\n", wantErr: "line 2: field duration: must be > 0"},
		{name: "negative epochs", in: "name,submit,app,epochs\na,1,ncf,-3\n", wantErr: "line 2: field epochs:"},
		{name: "duplicate name", in: "name,submit,app\na,1,ncf\n#\na,2,ncf\n", wantErr: `line 4: field name: duplicate name "a" (first on line 2)`},
		{name: "upper-case name", in: "name,submit,app\nJobA,1,ncf\n", wantErr: `line 2: field name: "JobA" is not a valid name`},
		{name: "name ends with dash", in: "name,submit,app\njob-,1,ncf\n", wantErr: "line 2: field name:"},
		{name: "name too long", in: "name,submit,app\n" + strings.Repeat("a", 64) + ",1,ncf\n", wantErr: "line 2: field name:"},
		{name: "empty app", in: "name,submit,app\na,1, \n", wantErr: "line 2: field app: empty"},
		{
			name: "teams",
			in:   "name,submit,app,team\na,1,ncf,team-a\nb,2,ncf,\nc,3,ncf, b \n",
			want: []Job{
				{Name: "a", Submit: 1, App: "ncf", MinWorkers: 1, MaxWorkers: 1, Requested: 1, Team: "team-a"},
				{Name: "b", Submit: 2, App: "ncf", MinWorkers: 1, MaxWorkers: 1, Requested: 1},
				{Name: "c", Submit: 3, App: "ncf", MinWorkers: 1, MaxWorkers: 1, Requested: 1, Team: "b"},
			},
		},
		{name: "upper-case team", in: "name,submit,app,team\na,1,ncf,Team-A\n", wantErr: `line 2: field team: team "Team-A": want a namespace name`},
		{name: "team ends with dash", in: "name,submit,app,team\na,1,ncf,ok\nb,1,ncf,a-\n", wantErr: "line 3: field team:"},
		{name: "team too long", in: "name,submit,app,team\na,1,ncf," + strings.Repeat("t", 64) + "\n", wantErr: "line 2: field team:"},
	}
	runReaderCases(t, cases, func(s string) ([]Job, error) { return ReadVoda(strings.NewReader(s)) })
}

func TestReadDuration(t *testing.T) {
	const hdr = "job_id,submission_time,duration,num_gpu\n"
	opts := DurationOptions{App: "resnet50"}
	cases := []readerCase{
		{
			name: "defaults",
			in:   hdr + "application_15_2,30.5,7200,8\napplication_15_1,0,60,1\n",
			want: []Job{
				{Name: "application_15_1", Submit: 0, App: "resnet50", MinWorkers: 1, MaxWorkers: 2, Requested: 1, Duration: 60},
				{Name: "application_15_2", Submit: 30.5, App: "resnet50", MinWorkers: 1, MaxWorkers: 16, Requested: 8, Duration: 7200},
			},
		},
		{name: "header only", in: hdr, wantErr: "line 1: no jobs"},
		{name: "missing column", in: "job_id,submission_time,num_gpu\na,1,2\n", wantErr: "line 1: field duration: missing column"},
		{name: "zero gpus", in: hdr + "a,1,60,0\n", wantErr: "line 2: field num_gpu: 0 is below the minimum 1"},
		{name: "zero duration", in: hdr + "a,1,0,1\n", wantErr: "line 2: field duration: must be > 0"},
		{name: "negative duration", in: hdr + "a,1,-3,1\n", wantErr: "line 2: field duration: -3 is negative"},
		{name: "not a number", in: hdr + "a,1,long,1\n", wantErr: "line 2: field duration:"},
		{name: "duplicate id", in: hdr + "a,1,6,1\na,1,6,1\n", wantErr: "line 3: field job_id: duplicate name"},
		{name: "overflow", in: hdr + "a,1,6,9223372036854775807\n", wantErr: "line 2: field num_gpu:"},
	}
	runReaderCases(t, cases, func(s string) ([]Job, error) { return ReadDuration(strings.NewReader(s), opts) })

	t.Run("options", func(t *testing.T) {
		in := hdr + "a,0,60,4\nb,1,60,1\n"
		got, err := ReadDuration(strings.NewReader(in), DurationOptions{App: "bert", MaxFactor: 1, MinWorkers: 2})
		if err != nil {
			t.Fatal(err)
		}
		want := []Job{
			{Name: "a", Submit: 0, App: "bert", MinWorkers: 2, MaxWorkers: 4, Requested: 4, Duration: 60},
			{Name: "b", Submit: 1, App: "bert", MinWorkers: 1, MaxWorkers: 1, Requested: 1, Duration: 60},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("jobs (-want,+got):\n%s", diff)
		}
	})
	for name, o := range map[string]DurationOptions{
		"no app":          {},
		"negative factor": {App: "x", MaxFactor: -1},
		"negative min":    {App: "x", MinWorkers: -1},
	} {
		t.Run("bad options/"+name, func(t *testing.T) {
			if _, err := ReadDuration(strings.NewReader(hdr+"a,0,60,4\n"), o); err == nil {
				t.Error("no error")
			}
		})
	}
}

func TestRead(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pollux := write("p.csv", "name,time,application,num_replicas,batch_size\na,1,ncf,2,64\n")
	voda := write("v.csv", "name,submit,app\na,1,ncf\n")
	dur := write("d.csv", "job_id,submission_time,duration,num_gpu\na,1,60,2\n")
	bad := write("bad.csv", "name,submit,app\na,x,ncf\n")
	opts := Options{Duration: DurationOptions{App: "bert"}}

	for _, tc := range []struct {
		path, format string
		wantLen      int
		wantErr      string
	}{
		{path: pollux, format: "pollux", wantLen: 1},
		{path: voda, format: "VODA", wantLen: 1},
		{path: dur, format: " Duration ", wantLen: 1},
		{path: pollux, format: "philly", wantErr: `unknown workload format "philly" (formats: pollux, voda, duration, or auto)`},
		{path: bad, format: "voda", wantErr: bad + `: line 2: field submit: "x" is not a finite number`},
		{path: voda, format: "duration", wantErr: voda + ": duration trace: options: App is required"},
		{path: filepath.Join(dir, "missing.csv"), format: "voda", wantErr: "missing.csv"},
	} {
		t.Run(filepath.Base(tc.path)+"/"+tc.format, func(t *testing.T) {
			o := opts
			if strings.Contains(tc.wantErr, "App is required") {
				o = Options{}
			}
			jobs, err := Read(tc.path, tc.format, o)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(jobs) != tc.wantLen {
				t.Errorf("got %d jobs, want %d", len(jobs), tc.wantLen)
			}
		})
	}

	t.Run("LineError through Read", func(t *testing.T) {
		_, err := Read(bad, "voda", Options{})
		var le *LineError
		if !errors.As(err, &le) || le.Line != 2 || le.Field != "submit" {
			t.Errorf("errors.As(%v) = %+v, want line 2 field submit", err, le)
		}
		_, err = Read(write("empty.csv", "name,submit,app\n"), "voda", Options{})
		if !errors.Is(err, ErrNoJobs) {
			t.Errorf("header-only error %v is not ErrNoJobs", err)
		}
	})
}

// polluxWorkloads returns the artifact's workload files, or skips the test.
func polluxWorkloads(t *testing.T) []string {
	t.Helper()
	dir := polluxdata.Dir(t)
	files, _ := filepath.Glob(filepath.Join(dir, "workloads*", "workload-*.csv"))
	if len(files) == 0 {
		t.Skipf("no Pollux workloads in %s: copy the Pollux OSDI'21 artifact's simulator/workloads* into ../shared/traces/pollux, see docs/workloads.md", dir)
	}
	return files
}

func TestPolluxArtifactWorkloads(t *testing.T) {
	files := polluxWorkloads(t)
	if len(files) != 32 {
		t.Errorf("found %d workload files, want 32 (4 loads x 8)", len(files))
	}
	apps := map[string]bool{"bert": true, "cifar10": true, "deepspeech2": true, "imagenet": true, "ncf": true, "yolov3": true}
	for _, f := range files {
		t.Run(filepath.Base(filepath.Dir(f))+"/"+filepath.Base(f), func(t *testing.T) {
			jobs, err := Read(f, FormatPollux, Options{})
			if err != nil {
				t.Fatal(err)
			}
			// 160 jobs at 1.0x load; the other loads scale the job count
			// over the same eight hours (workloads-0.5 has 80, -2.0 320).
			load := 1.0
			if l, ok := strings.CutPrefix(filepath.Base(filepath.Dir(f)), "workloads-"); ok {
				if load, err = strconv.ParseFloat(l, 64); err != nil {
					t.Fatalf("load of %s: %v", f, err)
				}
			}
			want := int(math.Round(160 * load))
			if len(jobs) != want {
				t.Errorf("got %d jobs, want %d", len(jobs), want)
			}
			checkJobs(t, jobs)
			for _, j := range jobs {
				if !apps[j.App] {
					t.Errorf("job %s: unexpected app %q", j.Name, j.App)
				}
				if !ValidName(j.Name) {
					t.Errorf("job %s: not a valid voda name", j.Name)
				}
			}
		})
	}
}

// checkJobs asserts what every reader guarantees.
func checkJobs(t testing.TB, jobs []Job) {
	t.Helper()
	if err := validateJobs(jobs); err != nil {
		t.Fatalf("invalid jobs: %v", err)
	}
	sorted := slices.Clone(jobs)
	Sort(sorted)
	if !slices.Equal(sorted, jobs) {
		t.Fatal("jobs are not sorted by (Submit, Name)")
	}
}

// validateJobs checks what every reader guarantees of its jobs: non-empty
// unique names and apps, 1 <= MinWorkers <= Requested <= MaxWorkers,
// finite non-negative times, non-negative priority, epochs and batch size,
// and not both Epochs and Duration. It does not check the order (see Sort)
// nor the Voda name syntax (see ValidName).
func validateJobs(jobs []Job) error {
	seen := make(map[string]int, len(jobs))
	for i, j := range jobs {
		if err := validateJob(j); err != nil {
			return fmt.Errorf("job %d (%q): %w", i, j.Name, err)
		}
		if first, dup := seen[j.Name]; dup {
			return fmt.Errorf("job %d (%q): duplicate name (first at job %d)", i, j.Name, first)
		}
		seen[j.Name] = i
	}
	return nil
}

func validateJob(j Job) error {
	switch {
	case j.Name == "":
		return errors.New("empty name")
	case j.App == "":
		return errors.New("empty app")
	case !finite(j.Submit) || j.Submit < 0:
		return fmt.Errorf("submit %v is not a finite time >= 0", j.Submit)
	case j.MinWorkers < 1:
		return fmt.Errorf("min workers %d is below 1", j.MinWorkers)
	case j.Requested < j.MinWorkers:
		return fmt.Errorf("requested %d is below min workers %d", j.Requested, j.MinWorkers)
	case j.MaxWorkers < j.Requested:
		return fmt.Errorf("max workers %d is below requested %d", j.MaxWorkers, j.Requested)
	case j.Priority < 0:
		return fmt.Errorf("priority %d is negative", j.Priority)
	case j.Epochs < 0:
		return fmt.Errorf("epochs %d is negative", j.Epochs)
	case !finite(j.Duration) || j.Duration < 0:
		return fmt.Errorf("duration %v is not a finite time >= 0", j.Duration)
	case j.Epochs > 0 && j.Duration > 0:
		return errors.New("both epochs and duration are set")
	case j.BatchSize < 0:
		return fmt.Errorf("batch size %d is negative", j.BatchSize)
	case j.Team != "" && model.ValidTeam(j.Team) != nil:
		return model.ValidTeam(j.Team)
	}
	return nil
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

func TestGenerate(t *testing.T) {
	a := Generate(GenOptions{Seed: 7})
	b := Generate(GenOptions{Seed: 7})
	if diff := cmp.Diff(a, b); diff != "" {
		t.Fatalf("same seed, different workloads (-first,+second):\n%s", diff)
	}
	if c := Generate(GenOptions{Seed: 8}); cmp.Equal(a, c) {
		t.Error("seeds 7 and 8 give the same workload")
	}
	if len(a) != DefaultGenJobs {
		t.Errorf("got %d jobs, want the default %d", len(a), DefaultGenJobs)
	}
	checkJobs(t, a)
	counts := map[int]int{}
	apps := map[string]bool{}
	for _, j := range a {
		counts[j.Requested]++
		apps[j.App] = true
		if !ValidName(j.Name) {
			t.Errorf("%s: invalid name", j.Name)
		}
		if j.MinWorkers != 1 || j.MaxWorkers != 2*j.Requested || j.Epochs != 0 || j.Priority != 0 {
			t.Errorf("%s: unexpected shape %+v", j.Name, j)
		}
		if j.Duration < 300 || j.Duration > 8*3600 {
			t.Errorf("%s: duration %v outside 5 min .. 8 h", j.Name, j.Duration)
		}
		if !strings.HasPrefix(j.Name, j.App+"-") {
			t.Errorf("%s: name does not start with the app %s", j.Name, j.App)
		}
	}
	if counts[1] <= counts[8] || len(counts) != 4 {
		t.Errorf("requested counts %v, want all of 1,2,4,8 and more 1s than 8s", counts)
	}
	if len(apps) != len(DefaultApps()) {
		t.Errorf("apps %v, want all of %v", apps, DefaultApps())
	}
	// Mean interarrival is near the default (200 exponential gaps).
	mean := a[len(a)-1].Submit / float64(len(a)-1)
	if mean < 0.7*DefaultMeanInterarrival || mean > 1.3*DefaultMeanInterarrival {
		t.Errorf("mean interarrival %.1f s, want about %v", mean, DefaultMeanInterarrival)
	}

	small := Generate(GenOptions{Jobs: 5, Seed: 1, MeanInterarrival: 10, Apps: []string{"", "x"}})
	if len(small) != 5 {
		t.Fatalf("got %d jobs, want 5", len(small))
	}
	for _, j := range small {
		if j.App != "x" {
			t.Errorf("%s: app %q, want x", j.Name, j.App)
		}
	}
}

func polluxWorkloadsIfAny(t *testing.T) []string {
	dir, ok := polluxdata.Find()
	if !ok {
		return nil
	}
	files, _ := filepath.Glob(filepath.Join(dir, "workloads", "workload-*.csv"))
	return files
}

func TestDetectFormat(t *testing.T) {
	for _, tc := range []struct {
		name, in, want, wantErr string
	}{
		{name: "pollux", in: "name,time,application,num_replicas,batch_size\na,1,b,1,2\n", want: FormatPollux},
		{name: "pollux reordered upper-case", in: "\ufeffTime,Name,Num_Replicas,Application,Batch_Size\n", want: FormatPollux},
		{name: "voda with comments", in: "# converted\n\nname,submit,app,max_workers\n", want: FormatVoda},
		{name: "duration", in: "job_id,submission_time,duration,num_gpu,user\n", want: FormatDuration},
		{name: "philly raw", in: "timestamp,duration,num_gpus,gpu_time,cluster\n", wantErr: `line 1: cannot tell the workload format from the header "timestamp,duration,num_gpus,gpu_time,cluster"`},
		{name: "empty", in: "", wantErr: "line 1: missing header"},
		{name: "comment then junk", in: "#x\nfoo\n", wantErr: "line 2: cannot tell"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := detectFormat(strings.NewReader(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}

	dir := t.TempDir()
	p := filepath.Join(dir, "w.csv")
	if err := os.WriteFile(p, []byte("job_id,submission_time,duration,num_gpu\na,1,60,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if f, err := DetectFormat(p); err != nil || f != FormatDuration {
		t.Errorf("DetectFormat(%s) = %q, %v", p, f, err)
	}
	jobs, err := Read(p, "Auto", Options{Duration: DurationOptions{App: "amdahl"}})
	if err != nil || len(jobs) != 1 || jobs[0].App != "amdahl" {
		t.Errorf("Read auto: %+v, %v", jobs, err)
	}
	if _, err := DetectFormat(filepath.Join(dir, "nope.csv")); err == nil {
		t.Error("missing file: no error")
	}
	for _, f := range polluxWorkloadsIfAny(t) {
		if got, err := DetectFormat(f); err != nil || got != FormatPollux {
			t.Errorf("DetectFormat(%s) = %q, %v; want pollux", f, got, err)
		}
	}
}
