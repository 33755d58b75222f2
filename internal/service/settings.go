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
//
// The algorithm is composed across teams (algorithm.Teams): each team
// (namespace) gets its quota's share, and within a team the priority
// classes are served in order, each by its own instance of the algorithm.
func (st *settings) allocator(set store.Settings) algorithm.Allocator {
	name := set.Algorithm
	if name == "" {
		name = st.defaultAlgorithm
	}
	params := set.Params
	if _, err := st.algorithms.NewFromMap(name, params); err != nil {
		st.log.Error("stored algorithm unusable; using the default", "algorithm", name, "err", err)
		name, params = st.defaultAlgorithm, nil
	}
	build := func() (algorithm.Allocator, error) { return st.algorithms.NewFromMap(name, params) }
	a, err := algorithm.NewTeams(build, set.Quotas)
	if err != nil {
		// Quotas the API checked cannot be refused here; a damaged record
		// could: run without them rather than not at all.
		st.log.Error("stored quotas unusable; scheduling without them", "err", err)
		a, _ = algorithm.NewTeams(build, nil)
	}
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
