package queue_test

import (
	"testing"

	"github.com/vodascheduler/voda/internal/queue"
)

// BenchmarkPublish measures one Publish of a 256-byte body, serially or
// from 8×GOMAXPROCS goroutines sharing the Queue. To RabbitMQ a Publish is
// a persistent message waiting for its publisher confirm, which the broker
// sends once the message is on disk: the serial figure is mostly fsync
// latency, and concurrent publishers share the broker's fsyncs.
func BenchmarkPublish(b *testing.B) {
	impls := []struct {
		name string
		open func(b *testing.B) queue.Queue
	}{
		{"mem", func(b *testing.B) queue.Queue { return openMem(b) }},
		{"rabbitmq", func(b *testing.B) queue.Queue { return openRabbit(b) }},
	}
	body := make([]byte, 256)
	for _, impl := range impls {
		b.Run(impl.name+"/serial", func(b *testing.B) {
			q, name := impl.open(b), uniqueName(b)
			defer q.Close()
			b.ReportAllocs()
			for b.Loop() {
				if err := q.Publish(b.Context(), name, body); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(impl.name+"/parallel", func(b *testing.B) {
			q, name := impl.open(b), uniqueName(b)
			defer q.Close()
			b.ReportAllocs()
			b.SetParallelism(8)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := q.Publish(b.Context(), name, body); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
