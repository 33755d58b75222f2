package workload

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

// Workers of several GPUs in both formats: the Voda format's
// gpus_per_worker column counts GPUs per worker and the worker columns
// workers; the Pollux format's num_replicas counts GPUs, whole workers of
// gpus_per_worker.
func TestReadMultiGPUWorkers(t *testing.T) {
	for _, tc := range []struct {
		name, format, in string
		want             []Job // nil: an error containing err
		err              string
	}{{
		name: "voda", format: FormatVoda,
		in: "name,submit,app,min_workers,max_workers,gpus_per_worker\na,0,ncf,1,3,4\nb,5,ncf,2,2,\nc,6,ncf,1,1,1\n",
		want: []Job{{Name: "a", App: "ncf", MinWorkers: 1, MaxWorkers: 3, Requested: 1, GPUsPerWorker: 4},
			{Name: "b", Submit: 5, App: "ncf", MinWorkers: 2, MaxWorkers: 2, Requested: 2},
			{Name: "c", Submit: 6, App: "ncf", MinWorkers: 1, MaxWorkers: 1, Requested: 1}},
	}, {
		name: "voda, zero", format: FormatVoda,
		in: "name,submit,app,gpus_per_worker\na,0,ncf,0\n", err: "gpus_per_worker: 0 is below the minimum 1",
	}, {
		name: "voda, too many", format: FormatVoda,
		in: "name,submit,app,gpus_per_worker\na,0,ncf,65\n", err: "gpus_per_worker: 65 is above the maximum 64",
	}, {
		name: "pollux", format: FormatPollux,
		in: "name,time,application,num_replicas,batch_size,gpus_per_worker\na,0,ncf,8,64,4\nb,1,ncf,3,64,\n",
		want: []Job{{Name: "a", App: "ncf", MinWorkers: 1, MaxWorkers: 2, Requested: 2, BatchSize: 64, GPUsPerWorker: 4, WidenMax: true},
			{Name: "b", Submit: 1, App: "ncf", MinWorkers: 1, MaxWorkers: 3, Requested: 3, BatchSize: 64, WidenMax: true}},
	}, {
		name: "pollux, partial worker", format: FormatPollux,
		in: "name,time,application,num_replicas,batch_size,gpus_per_worker\na,0,ncf,6,64,4\n", err: "num_replicas: 6 is not whole workers of gpus_per_worker 4",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var got []Job
			var err error
			if tc.format == FormatVoda {
				got, err = ReadVoda(strings.NewReader(tc.in))
			} else {
				got, err = ReadPollux(strings.NewReader(tc.in))
			}
			if tc.want == nil {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("jobs\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

// A share of generated jobs draws G; they hold whole workers of G GPUs,
// at least the replicas drawn, and read back the same. A share of 0 gives
// the same jobs as before the option existed.
func TestGeneratePolluxMultiGPU(t *testing.T) {
	in, _ := syntheticPhilly()
	trace := mustPhilly(t, in)
	plain, err := GeneratePollux(trace, testOpts(5))
	if err != nil {
		t.Fatal(err)
	}
	o := testOpts(5)
	o.Jobs, o.MultiGPUShare = 240, 1.0/3
	o.Hours = 24
	jobs, err := GeneratePollux(trace, o)
	if err != nil {
		t.Fatal(err)
	}
	multi := 0
	for _, j := range jobs {
		g := j.PerWorker()
		if g == 1 {
			continue
		}
		multi++
		if g != 2 && g != 4 && g != 8 {
			t.Errorf("%s: G %d, want 2, 4 or 8", j.Name, g)
		}
		if j.Requested < 1 || j.MaxWorkers != j.Requested {
			t.Errorf("%s: %d workers requested, max %d", j.Name, j.Requested, j.MaxWorkers)
		}
		// The replicas drawn (a configuration of the app with its batch)
		// fit in the workers, less than a worker over.
		fits := false
		for _, c := range testConfigs[j.App] {
			gpus := j.Requested * g
			fits = fits || (c.Batch == j.BatchSize && gpus >= c.Replicas && gpus < c.Replicas+g)
		}
		if !fits {
			t.Errorf("%s: %d workers of %d fit no configuration of %s", j.Name, j.Requested, g, j.App)
		}
	}
	if multi < 55 || multi > 105 {
		t.Errorf("%d of %d jobs with several GPUs a worker, want about a third", multi, len(jobs))
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
		t.Error("the workload read back differs")
	}
	o = testOpts(5)
	o.MultiGPUShare = 0
	again, err := GeneratePollux(trace, o)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again, plain) {
		t.Error("a share of 0 changed the workload")
	}
	for _, bad := range []PolluxGenOptions{{MultiGPUShare: 1.5}, {MultiGPUShare: 0.5, GPUsPerWorker: []int{0}}} {
		o := testOpts(5)
		o.MultiGPUShare, o.GPUsPerWorker = bad.MultiGPUShare, bad.GPUsPerWorker
		if _, err := GeneratePollux(trace, o); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}
