package algorithm

import (
	"fmt"
	"strings"
)

// Builtin returns a new registry holding Voda's eight algorithms, in this
// order: FIFO, ElasticFIFO, SRJF, ElasticSRJF, Tiresias, ElasticTiresias,
// FfDLOptimizer, AFS-L. Callers may Register more into it.
//
// The entries are distinct compile-time names, so they are stored directly
// rather than through Register: building the built-in registry has no
// failure path (a test checks that Register accepts each of them).
func Builtin() *Registry {
	r := NewRegistry()
	for _, e := range builtinEntries() {
		r.entries[strings.ToLower(e.Name)] = e
		r.names = append(r.names, e.Name)
	}
	return r
}

func builtinEntries() []Entry {
	lasParams := []ParamDoc{
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
			Elastic: true,
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
			Elastic: true,
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
			Elastic: true,
			Summary: "Tiresias queues, min first, spare GPUs by marginal speedup gain (Wu et al., TPDS'21)",
			Params: append(append([]ParamDoc(nil), lasParams...), ParamDoc{
				Name: "pending_limit", Default: fmt.Sprint(DefaultElasticTiresiasPendingLimit),
				Help: "with more waiting jobs than this, only queue-0 jobs grow beyond their min",
			}),
			New: NewElasticTiresias,
		},
		{
			Name:    NameFfDL,
			Elastic: true,
			Summary: "maximize the total speedup over all jobs (Saxena et al., MASCOTS'20)",
			New:     NewFfDL,
		},
		{
			Name:    NameAFSL,
			Elastic: true,
			Summary: "one GPU at a time, shorter job first unless the longer gains relatively more (Hwang et al., NSDI'21)",
			New:     NewAFSL,
		},
	}
}
