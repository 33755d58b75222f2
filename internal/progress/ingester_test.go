package progress_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/vodascheduler/voda/internal/progress"
)

// TestIngesterConcurrentReports: reports for one job at once, each of a
// process that believes it is the job's rank 0, on the embedded store:
// every one is applied (none lost to another's write: the revision counts
// them all) or, beyond MaxWaiting, refused as busy; the stored state is
// the last one applied.
func TestIngesterConcurrentReports(t *testing.T) {
	for _, c := range []struct {
		name              string
		reporters, rounds int
		maxWaiting        int
		wantBusy          bool
	}{
		{"two rank 0s", 2, 20, 0, false},
		{"all wait their turn", 32, 2, 32, false},
		{"waiters capped", 64, 2, 4, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			st := storeWithJobs(t, 1)
			in := &progress.Ingester{Store: st, Clock: &fixedClock{}, MaxWaiting: c.maxWaiting}
			name := jobName(0)
			var mu sync.Mutex
			applied, busy := 0, 0
			last := map[string]int64{} // a generation's last steps applied
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i := range c.reporters {
				wg.Go(func() {
					<-start
					gen := fmt.Sprint("rank0-", i)
					for r := range int64(c.rounds) {
						_, err := in.Ingest(ctx, name, progress.Report{Generation: gen, Workers: 2, Steps: 100 * (r + 1), Epoch: float64(r+1) / 10})
						mu.Lock()
						switch {
						case err == nil:
							applied++
							last[gen] = 100 * (r + 1)
						case errors.Is(err, progress.ErrBusy):
							busy++
						default:
							t.Errorf("%s, report %d: %v", gen, r, err)
						}
						mu.Unlock()
					}
				})
			}
			close(start)
			wg.Wait()
			j, err := st.GetJob(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			s, err := progress.Decode(j.Progress)
			if err != nil || s == nil {
				t.Fatalf("stored state %v, %v", s, err)
			}
			t.Logf("%d applied, %d busy", applied, busy)
			if int(j.ProgressRevision) != applied {
				t.Errorf("revision %d after %d reports applied: a write was lost or made twice", j.ProgressRevision, applied)
			}
			if want, ok := last[s.Latest.Generation]; !ok || s.Latest.Steps != want {
				t.Errorf("stored %s at %d steps, want the last report applied of a reporter (%d)", s.Latest.Generation, s.Latest.Steps, want)
			}
			if total := c.reporters * c.rounds; applied+busy != total || (busy > 0) != c.wantBusy {
				t.Errorf("%d applied and %d busy of %d reports; busy wanted: %v", applied, busy, total, c.wantBusy)
			}
		})
	}
}
