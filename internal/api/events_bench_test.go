package api

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vodascheduler/voda/internal/eventhub"
	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/store"
)

// cpuTime is the process's user and system CPU time so far.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkEventStream measures the event streams' cost with 1,000 live
// jobs and 1 or 10 open streams: each op changes the status of 100 jobs (as
// a scheduler's cycle does, in one SaveStatus, then its own status) and
// waits until every stream got the 100 job events. It reports the
// process's CPU time per op (the store writes, the shared poll, the
// encoding and the 10 clients reading, all in this process), the CPU time
// per second of idle polls (over 5 s: one read of the jobs), and the heap
// in use with the streams open. Each job carries an
// allocation history of 8 changes (as a job resized a few times does), so
// the views are the size the dashboard gets.
func BenchmarkEventStream(b *testing.B) {
	for _, streams := range []int{1, 10} {
		b.Run(fmt.Sprintf("streams=%d", streams), func(b *testing.B) { benchmarkStreams(b, streams) })
	}
}

func benchmarkStreams(b *testing.B, streams int) {
	const jobs, changed = 1000, 100
	f := newFixtureWith(b, func(c *Config) { c.Streams = StreamLimits{Poll: time.Second} })
	ctx := context.Background()
	names := make([]string, jobs)
	for i := range jobs {
		names[i] = fmt.Sprintf("job-%04d", i)
		j := store.Job{Name: names[i], Kind: "MPIJob", Namespace: "default",
			Spec: model.JobSpec{Name: names[i], GPUType: "v100", MinWorkers: 1, MaxWorkers: 4, SubmitTime: t0.Add(time.Duration(i) * time.Second)},
			Status: store.JobStatus{State: model.JobState{Status: model.StatusWaiting}, Est: model.Estimates{RemainingSeconds: -1},
				Allocations: benchHistory(i)}}
		if err := f.store.CreateJob(ctx, j); err != nil {
			b.Fatal(err)
		}
	}
	var got atomic.Int64 // job events received, over all streams
	for range streams {
		resp, err := http.Get(f.url + RouteEvents)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { resp.Body.Close() })
		go func() {
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(nil, 16<<20)
			for sc.Scan() {
				if strings.HasPrefix(sc.Text(), "event: job") {
					got.Add(1)
				}
			}
		}()
	}
	for i := 0; f.srv.hub.Subscribers() < streams; i++ {
		if i > 500 {
			b.Fatal("streams not open after 5 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	revision := map[string]int64{}
	runtime.GC()
	b.ResetTimer()
	cpu0, wall0 := cpuTime(b), time.Now()
	for op := 0; op < b.N; op++ {
		writes := map[string]store.StatusWrite{}
		for k := range changed {
			name := names[(op*changed+k)%jobs]
			writes[name] = store.StatusWrite{Revision: revision[name], Status: store.JobStatus{
				State: model.JobState{Status: model.StatusWaiting, Queue: op + 1}, Est: model.Estimates{RemainingSeconds: -1}, QueuePosition: k + 1,
				Allocations: benchHistory(op + k)}}
			revision[name]++
		}
		if _, err := f.store.SaveStatus(ctx, writes); err != nil {
			b.Fatal(err)
		}
		if err := f.store.PutStatus(ctx, "v100", store.SchedulerStatus{Now: t0, Cycles: int64(op + 1)}); err != nil {
			b.Fatal(err)
		}
		want := int64((op + 1) * changed * streams)
		for got.Load() < want {
			time.Sleep(time.Millisecond)
		}
	}
	cpu, wall := cpuTime(b)-cpu0, time.Since(wall0)
	b.StopTimer()
	b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
	b.ReportMetric(float64(wall.Milliseconds())/float64(b.N), "wall-ms/op")
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MiB")
	idle0 := cpuTime(b)
	time.Sleep(eventhub.FullPollEvery * time.Second)
	b.ReportMetric(float64((cpuTime(b)-idle0).Milliseconds())/eventhub.FullPollEvery, "idle-cpu-ms/s")
	f.srv.CloseStreams()
}

// benchHistory is an allocation history of 8 changes between 1 and 8
// workers on two of 64 nodes, ending without GPUs.
func benchHistory(seed int) []store.Allocation { return allocHistory(seed, 8) }

// allocHistory is an allocation history of n changes between 1 and 8
// workers on two of 64 nodes, ending without GPUs.
func allocHistory(seed, n int) []store.Allocation {
	h := make([]store.Allocation, 0, n)
	for i := range n - 1 {
		w := (seed+i)%8 + 1
		p := model.JobPlacement{{Node: fmt.Sprintf("node-%02d", (seed+i)%64), Workers: (w + 1) / 2}}
		if w > 1 {
			p = append(p, model.NodeWorkers{Node: fmt.Sprintf("node-%02d", (seed+i+1)%64), Workers: w / 2})
		}
		h = append(h, store.Allocation{At: t0.Add(time.Duration(seed+i) * time.Minute), Placement: p})
	}
	return append(h, store.Allocation{At: t0.Add(time.Duration(seed+n-1) * time.Minute)})
}

// BenchmarkEventStreamScale measures what idle streams cost with 100,000
// finished and 1,000 live jobs on the embedded store (made with the
// store's API): "idle/streams=N" with N streams open and reading, each
// op one second with no change, reports the process's CPU time per
// second (the shared poll, the heartbeats, the clients); "never-read"
// opens 100 streams whose clients read nothing after the first byte (a
// 4 KiB receive buffer, as rawStream) and reports how much the process's
// resident memory and heap grew. Run it with -benchtime 5x: setting up
// the jobs takes a minute.
func BenchmarkEventStreamScale(b *testing.B) {
	const finished, live, silent = 100000, 1000, 100
	f := newFixtureWith(b, func(c *Config) { c.Streams = StreamLimits{MaxStreams: 2 * silent, MaxPerCaller: 2 * silent} })
	start := time.Now()
	seedJobs(b, f.store, "done", finished, true)
	seedJobs(b, f.store, "live", live, false)
	b.Logf("%d finished and %d live jobs created in %v", finished, live, time.Since(start).Round(time.Second))
	for _, streams := range []int{0, 1, 10} {
		b.Run(fmt.Sprintf("idle/streams=%d", streams), func(b *testing.B) {
			var got atomic.Int64 // snapshots read
			for range streams {
				resp, err := http.Get(f.url + RouteEvents)
				if err != nil {
					b.Fatal(err)
				}
				defer resp.Body.Close()
				go func() {
					sc := bufio.NewScanner(resp.Body)
					sc.Buffer(nil, 64<<20)
					for sc.Scan() {
						if sc.Text() == "event: "+eventhub.EventSnapshot {
							got.Add(1)
						}
					}
				}()
			}
			for i := 0; got.Load() < int64(streams); i++ {
				if i > 3000 {
					b.Fatal("snapshots not read after 30 s")
				}
				time.Sleep(10 * time.Millisecond)
			}
			time.Sleep(2 * time.Second) // the snapshots' own cost is not the idle cost
			b.ResetTimer()
			cpu0, wall0 := cpuTime(b), time.Now()
			for range b.N {
				time.Sleep(time.Second)
			}
			b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/1000/time.Since(wall0).Seconds(), "cpu-ms/s")
		})
	}
	b.Run(fmt.Sprintf("never-read/streams=%d", silent), func(b *testing.B) {
		waitIdle(b, f)
		rss0, heap0 := residentBytes(b), heapInUse()
		for range silent {
			rawStream(b, f.url, "")
		}
		if n := f.srv.hub.Subscribers(); n != silent {
			b.Fatalf("%d streams open, want %d", n, silent)
		}
		rss, heap := residentBytes(b)-rss0, int64(heapInUse())-int64(heap0)
		for range b.N {
		}
		b.ReportMetric(float64(rss)/(1<<20), "rss-growth-MiB")
		b.ReportMetric(float64(heap)/(1<<20), "heap-growth-MiB")
	})
}

// waitIdle waits until f's hub has no stream open.
func waitIdle(b *testing.B, f *fixture) {
	for i := 0; f.srv.hub.Subscribers() > 0; i++ {
		if i > 500 {
			b.Fatal("streams still open after 5 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// residentBytes is the process's resident memory.
func residentBytes(tb testing.TB) int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		tb.Fatal(err)
	}
	var size, resident int64
	if _, err := fmt.Sscan(string(b), &size, &resident); err != nil {
		tb.Fatalf("/proc/self/statm %q: %v", b, err)
	}
	return resident * int64(os.Getpagesize())
}
