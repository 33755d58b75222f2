package store_test

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/store"
	"github.com/vodascheduler/voda/internal/store/storetest"
)

// BenchmarkCreateJob measures concurrent submissions, as when many users
// submit at once: 32 goroutines per CPU, each creating distinct jobs with
// a 1 KiB manifest.
func BenchmarkCreateJob(b *testing.B) {
	b.Run("bolt", func(b *testing.B) {
		benchCreate(b, func() (store.Store, error) { return store.Open(b.Context(), "", b.TempDir()) })
	})
	b.Run("mongo", func(b *testing.B) {
		uri := storetest.FerretDB(b)
		benchCreate(b, func() (store.Store, error) { return store.Open(b.Context(), uri, "") })
	})
}

func benchCreate(b *testing.B, open func() (store.Store, error)) {
	s, err := open()
	if err != nil {
		b.Fatalf("Open: %v", err)
	}
	defer func() { _ = s.Close(b.Context()) }()
	manifest := []byte(`{"kind":"MPIJob","spec":"` + strings.Repeat("x", 1000) + `"}`)
	submit := time.Now()
	var seq atomic.Int64
	b.SetParallelism(32)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			name := fmt.Sprint("job-", seq.Add(1))
			j := store.Job{
				Name: name, Kind: "MPIJob", Manifest: manifest,
				Spec: model.JobSpec{Name: name, GPUType: "v100", MinWorkers: 1, MaxWorkers: 4, RequestedWorkers: 2, SubmitTime: submit},
			}
			if err := s.CreateJob(b.Context(), j); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
