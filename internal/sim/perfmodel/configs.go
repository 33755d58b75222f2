package perfmodel

import (
	"fmt"
	"math"
)

// Config is a fixed (non-adaptive) way to run a job: a number of replicas
// and a global batch size, with the job completion time it gives when the
// replicas are packed four to a node.
type Config struct {
	Replicas int
	Batch    int
	// JCT is the predicted time in seconds to train the application's
	// epochs at this configuration, with no queueing or restarts.
	JCT float64
}

// ConfigReplicas are the replica counts Configurations considers, in
// order.
var ConfigReplicas = []int{1, 2, 4, 6, 8, 12, 16, 24, 32, 48}

// configMaxJCT is the longest JCT a multi-replica configuration may have.
const configMaxJCT = 12 * 3600.0

// Configurations returns the "reasonable" fixed configurations that the
// Pollux artifact's workload generator assigns to jobs of this
// application, following its sampling procedure:
//
// For each replica count r in ConfigReplicas (stopping once r times the
// smallest local batch exceeds the largest validated batch), the replicas
// are packed onto 4-GPU nodes and every validated batch size B is tried:
// the local batch ceil(B/r) (skipped if below the smallest measured local
// batch) is split into accumulation steps no larger than the largest local
// batch, and the JCT is the iterations B needs for the application's
// epochs times the time of one optimizer step. The B with the least JCT is
// r's best. One replica gives the base JCT; another count r is a
// configuration if its best JCT is under 12 hours and its scaling
// efficiency base/best/r lies strictly between loUtil and hiUtil. With no
// such count the only configuration is one replica at its best batch.
//
// The result is in increasing order of replicas.
func (p *Profiled) Configurations(loUtil, hiUtil float64) ([]Config, error) {
	const eps = 1e-8
	var out []Config
	var base Config
	for _, r := range ConfigReplicas {
		if r*p.minLocal > p.maxBatch {
			break
		}
		pl := packed(r)
		best := Config{Replicas: r, JCT: math.Inf(1)}
		for _, v := range p.valid {
			local := int(math.Ceil(float64(v.batch)/float64(r) - eps))
			if local < p.minLocal {
				continue
			}
			accum := int(math.Ceil(float64(local)/float64(p.maxLocal)-eps)) - 1
			atomic := int(math.Ceil(float64(local)/float64(accum+1) - eps))
			step, syncTime, err := p.Throughput(pl, atomic)
			if err != nil {
				return nil, err
			}
			step += float64(accum) * (step - syncTime)
			e := p.epochs - 1
			if e >= len(v.iteration) {
				return nil, fmt.Errorf("%s: validation-%d.csv has %d rows, want %d epochs", p.name, v.batch, len(v.iteration), p.epochs)
			}
			if jct := v.iteration[e] * step; jct < best.JCT {
				best.JCT, best.Batch = jct, v.batch
			}
		}
		if best.Batch == 0 {
			if r == 1 {
				return nil, fmt.Errorf("%s: no validated batch size fits one replica", p.name)
			}
			continue
		}
		if r == 1 {
			base = best
			continue
		}
		if eff := base.JCT / best.JCT / float64(r); best.JCT < configMaxJCT && loUtil < eff && eff < hiUtil {
			out = append(out, best)
		}
	}
	if len(out) == 0 {
		if base.Batch == 0 {
			return nil, fmt.Errorf("%s: no configuration: the smallest local batch %d exceeds the largest batch %d", p.name, p.minLocal, p.maxBatch)
		}
		out = append(out, base)
	}
	return out, nil
}

// packed places n replicas on as few 4-GPU nodes as possible, filling each
// node before the next; it is already canonical.
func packed(n int) []int {
	var pl []int
	for n > 0 {
		k := min(n, 4)
		pl = append(pl, k)
		n -= k
	}
	return canonical(pl)
}
