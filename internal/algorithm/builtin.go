package algorithm

import (
	"fmt"

	"github.com/vodascheduler/voda/internal/registry"
)

// Builtin returns a new registry holding Voda's nine algorithms, in this
// order: FIFO, ElasticFIFO, SRJF, ElasticSRJF, Tiresias, ElasticTiresias,
// FfDLOptimizer, AFS-L, Goodput. Callers may Register more into it.
//
// The entries are distinct compile-time names, so registering them cannot
// fail (a test checks it).
func Builtin() *Registry {
	return registry.New[Allocator]("algorithm").MustRegister(builtinEntries()...)
}

func builtinEntries() []Entry {
	elastic := []string{TagElastic}
	lasParams := []registry.ParamDoc{
		{Name: "threshold", Default: fmt.Sprint(DefaultTiresiasThreshold),
			Help: "GPU-seconds of service in queue 0 after which a job drops to queue 1"},
		{Name: "starvation", Default: fmt.Sprint(DefaultTiresiasStarvation),
			Help: "promote a waiting queue-1 job to queue 0 once it has waited this many times its last run; 0 disables"},
	}
	return []Entry{
		{
			Name:    NameFIFO,
			Summary: "requested GPUs in arrival order, with backfilling",
			New:     NewFIFO,
		},
		{
			Name:    NameElasticFIFO,
			Tags:    elastic,
			Summary: "min GPUs in arrival order, then spare GPUs round-robin up to max (Voda's default)",
			New:     NewElasticFIFO,
		},
		{
			Name:    NameSRJF,
			Summary: "requested GPUs, shortest remaining time first, with backfilling",
			New:     NewSRJF,
		},
		{
			Name:    NameElasticSRJF,
			Tags:    elastic,
			Summary: "min GPUs shortest remaining time first, then spare GPUs round-robin up to max",
			New:     NewElasticSRJF,
		},
		{
			Name:    NameTiresias,
			Summary: "two-queue discretized 2D-LAS over requested GPUs (Gu et al., NSDI'19)",
			Params:  lasParams,
			New:     NewTiresias,
		},
		{
			Name:    NameElasticTiresias,
			Tags:    elastic,
			Summary: "Tiresias queues, min first, spare GPUs by marginal speedup gain (Wu et al., TPDS'21)",
			Params: append(append([]registry.ParamDoc(nil), lasParams...), registry.ParamDoc{
				Name: "pending_limit", Default: fmt.Sprint(DefaultElasticTiresiasPendingLimit),
				Help: "with more waiting jobs than this, only queue-0 jobs grow beyond their min",
			}),
			New: NewElasticTiresias,
		},
		{
			Name:    NameFfDL,
			Tags:    elastic,
			Summary: "maximize the total speedup over all jobs (Saxena et al., MASCOTS'20)",
			New:     NewFfDL,
		},
		{
			Name:    NameAFSL,
			Tags:    elastic,
			Summary: "one GPU at a time, shorter job first unless the longer gains relatively more (Hwang et al., NSDI'21)",
			New:     NewAFSL,
		},
		{
			Name:    NameGoodput,
			Tags:    elastic,
			Summary: "marginal speedup per GPU over remaining time; grows a running job only if that pays back restarts",
			Params: []registry.ParamDoc{
				{Name: "payback", Default: fmt.Sprint(DefaultGoodputPayback),
					Help: "restarts the time a running job saves by growing must pay back"},
				{Name: "hold", Default: fmt.Sprint(DefaultGoodputHold),
					Help: "factor on the value of a running job's current GPUs, so it is not shrunk for a small gain"},
				{Name: "starve", Default: fmt.Sprint(DefaultGoodputStarve),
					Help: "seconds a job may wait before it is served its minimum ahead of every other job's step (+Inf: never)"},
			},
			New: NewGoodput,
		},
	}
}
