package workload

import (
	"strings"
	"testing"
)

// The fuzz targets check that the readers never panic and either fail or
// return jobs that are valid, uniquely named and sorted.

func addSeeds(f *testing.F, seeds ...string) {
	for _, s := range seeds {
		f.Add(s)
	}
}

func FuzzReadPollux(f *testing.F) {
	addSeeds(f,
		"name,time,application,num_replicas,batch_size\ncifar10-0,107,cifar10,6,2048\nncf-2,135,ncf,1,32768\n",
		"name,time,application,num_replicas,batch_size\n",
		"time,name,application,batch_size,num_replicas,x\n1e3,a,b,0,2.0,\"q\"\"\"\n",
		"name,time,application,num_replicas,batch_size\na,1,b,-1,2\n",
		"name,time,application,num_replicas,batch_size,team\na,1,b,1,2,team-1\nc,1,b,1,2,\n",
		"name,time,application,num_replicas,batch_size,team\na,1,b,1,2,-x\n",
		"",
	)
	f.Fuzz(func(t *testing.T, in string) {
		jobs, err := ReadPollux(strings.NewReader(in))
		if err == nil {
			checkJobs(t, jobs)
		}
	})
}

func FuzzReadVoda(f *testing.F) {
	addSeeds(f,
		"name,submit,app,min_workers,max_workers,requested_workers,priority,epochs,duration,batch_size\nj-1,0.5,bert,2,16,4,3,,3600,256\n",
		"# c\nname,submit,app\nb,10,bert\na,10,ncf\n",
		"name,submit,app,min_workers,max_workers\na,1,ncf,4,2\n",
		"name,submit,app,epochs,duration\na,1,ncf,3,60\n",
		"name,submit,app\n",
		"name,submit,app,team\na,1,ncf,team-a\nb,1,ncf,\n",
		"name,submit,app,team\na,1,ncf,A\n",
	)
	f.Fuzz(func(t *testing.T, in string) {
		jobs, err := ReadVoda(strings.NewReader(in))
		if err != nil {
			return
		}
		checkJobs(t, jobs)
		for _, j := range jobs {
			if !ValidName(j.Name) {
				t.Fatalf("accepted invalid name %q", j.Name)
			}
		}
	})
}

func FuzzReadDuration(f *testing.F) {
	addSeeds(f,
		"job_id,submission_time,duration,num_gpu\napplication_1_2,30.5,7200,8\n",
		"job_id,submission_time,duration,num_gpu\na,1,0,1\n",
		"job_id,submission_time,duration,num_gpu\na,1,1,9223372036854775807\n",
	)
	f.Fuzz(func(t *testing.T, in string) {
		jobs, err := ReadDuration(strings.NewReader(in), DurationOptions{App: "resnet50", MaxFactor: 3, MinWorkers: 2})
		if err == nil {
			checkJobs(t, jobs)
		}
	})
}

func FuzzDetectFormat(f *testing.F) {
	addSeeds(f,
		"name,time,application,num_replicas,batch_size\n",
		"# c\nname,submit,app\n",
		"job_id,submission_time,duration,num_gpu\n",
		"\"a\nb\",c\n",
	)
	f.Fuzz(func(t *testing.T, in string) {
		got, err := detectFormat(strings.NewReader(in))
		if err == nil && got != FormatPollux && got != FormatVoda && got != FormatDuration {
			t.Fatalf("detected %q", got)
		}
	})
}

func FuzzReadPhilly(f *testing.F) {
	addSeeds(f,
		"timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,66.0,1,66.0,11cb48\n2017-10-09 03:13:03,2951.0,1,40000,6214e9\n",
		"timestamp,duration,num_gpus,gpu_time\n2017-10-09T23:59:59,1e9,0,0\n",
		"timestamp,duration,num_gpus,gpu_time\n2017-10-09T01:00:00+05:00,60,4,3600\n",
		"timestamp,duration,num_gpus,gpu_time,cluster\n\"2017\",x,1,1\n",
		"",
	)
	f.Fuzz(func(t *testing.T, in string) {
		rows, err := ReadPhilly(strings.NewReader(in))
		if err != nil {
			return
		}
		for _, r := range rows {
			if r.Line < 2 || !(r.Duration >= 0) || !(r.GPUTime >= 0) || r.GPUs < 0 {
				t.Fatalf("accepted bad row %+v", r)
			}
		}
		o := DefaultPolluxGenOptions()
		o.Jobs, o.Hours = 1, 24
		o.Configs = testConfigs
		jobs, err := GeneratePollux(rows, o)
		if err == nil {
			checkJobs(t, jobs)
		}
	})
}
