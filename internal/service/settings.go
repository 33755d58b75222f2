package service

import (
	"log/slog"
	"reflect"
	"time"

	"github.com/vodascheduler/voda/internal/algorithm"
	"github.com/vodascheduler/voda/internal/scheduler"
	"github.com/vodascheduler/voda/internal/store"
)

// settings turns the stored scheduler settings into the core's algorithm
// and rate limit, with the configured defaults where none is stored.
type settings struct {
	algorithms       *algorithm.Registry
	defaultAlgorithm string
	defaultRateLimit time.Duration
	log              *slog.Logger
	// current are the settings the core runs with. Loop goroutine once
	// Run started.
	current store.Settings
}

// allocator builds the stored algorithm, or the default when the stored
// one cannot be built (an algorithm removed since, say). New checked that
// the default builds.
func (st *settings) allocator(set store.Settings) algorithm.Allocator {
	name := set.Algorithm
	if name == "" {
		name = st.defaultAlgorithm
	}
	a, err := st.algorithms.NewFromMap(name, set.Params)
	if err == nil {
		return a
	}
	st.log.Error("stored algorithm unusable; using the default", "algorithm", name, "err", err)
	a, _ = st.algorithms.NewFromMap(st.defaultAlgorithm, nil)
	return a
}

func (st *settings) rateLimit(set store.Settings) time.Duration {
	if set.RateLimit != 0 {
		return set.RateLimit // negative: no rate limit
	}
	if st.defaultRateLimit != 0 {
		return st.defaultRateLimit
	}
	return scheduler.DefaultRateLimit
}

// apply gives the core the algorithm and rate limit of set, if they
// changed. Loop goroutine only.
func (st *settings) apply(c *scheduler.Core, set store.Settings) {
	if reflect.DeepEqual(set, st.current) {
		return
	}
	st.current = set
	a := st.allocator(set)
	c.SetAllocator(a)
	c.SetRateLimit(st.rateLimit(set))
	st.log.Info("settings changed", "algorithm", a.Name(), "rateLimit", c.RateLimit())
}
