package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/vodascheduler/voda/internal/queue"
	"github.com/vodascheduler/voda/internal/queue/rabbittest"
	"github.com/vodascheduler/voda/internal/store/storetest"
	"github.com/vodascheduler/voda/test/vodatest"
)

// TestMain stops the RabbitMQ broker the production-layout tests start
// and removes the embedded FerretDB's files.
func TestMain(m *testing.M) {
	code := rabbittest.Run(m)
	if err := storetest.Cleanup(); err != nil && code == 0 {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

func productionArgs(t *testing.T) []string { return vodatest.ProductionArgs(t) }

func TestRecoveryAfterKillMongoRabbitMQ(t *testing.T) {
	runRecovery(t, productionArgs(t)...)
}

// TestLoadMongoRabbitMQ loads the API alone, as production runs it: the
// schedulers are other processes. Every accepted job must be in MongoDB
// once (runLoad checks) and announced on RabbitMQ once.
func TestLoadMongoRabbitMQ(t *testing.T) {
	args := append(productionArgs(t), "--components", "api", "--gpu-types", "v100")
	res := runLoad(t, "MongoDB (FerretDB) store, RabbitMQ queue, API alone", args...)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	q, err := queue.Open(ctx, rabbittest.Start(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	deliveries, err := q.Consume(ctx, queue.SchedulerQueue("v100"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	quiet := time.NewTimer(time.Hour)
	for len(seen) < len(res.accepted) || !quiet.Stop() {
		select {
		case d := <-deliveries:
			m, err := queue.DecodeMessage(d.Body())
			if err != nil {
				t.Fatal(err)
			}
			seen[m.Job]++
			if err := d.Ack(); err != nil {
				t.Fatal(err)
			}
			if len(seen) == len(res.accepted) {
				quiet.Reset(time.Second) // wait a little for extra messages
			}
		case <-quiet.C:
		case <-ctx.Done():
			t.Fatalf("RabbitMQ delivered %d of %d job notifications", len(seen), len(res.accepted))
		}
	}
	for name := range res.accepted {
		if seen[name] != 1 {
			t.Errorf("job %s announced %d times on RabbitMQ", name, seen[name])
		}
	}
	if len(seen) != len(res.accepted) {
		t.Errorf("RabbitMQ announced %d jobs, the API accepted %d", len(seen), len(res.accepted))
	}
}
