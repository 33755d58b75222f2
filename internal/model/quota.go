package model

import (
	"fmt"
	"math"
	"regexp"
)

// Quota is one team's share of a GPU type's GPUs: Guarantee GPUs
// whenever its jobs want them, never more than Limit (0: no limit), and
// of the GPUs beyond every team's guarantee a share in proportion to
// Weight. A team is a namespace.
type Quota struct {
	Team      string
	Guarantee int
	Limit     int
	Weight    float64
}

// DefaultQuota is the quota of a team that no quota names: nothing
// guaranteed, no limit, weight 1. Teams without quotas thus share the
// GPUs beyond the guarantees equally with each other and with teams of
// weight 1.
var DefaultQuota = Quota{Weight: 1}

// Limits on a quota's values, so that no stored quota can overflow the
// arithmetic that divides the GPUs.
const (
	// MaxQuotaGPUs bounds a guarantee and a limit.
	MaxQuotaGPUs = 1 << 20
	// MaxQuotaWeight bounds a weight.
	MaxQuotaWeight = 1e6
	// MaxQuotas bounds the quotas of one GPU type.
	MaxQuotas = 10000
)

// teamName is a Kubernetes namespace name (an RFC 1123 label).
var teamName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// ValidTeam reports why name is not a team's name (a namespace), or nil.
func ValidTeam(name string) error {
	if !teamName.MatchString(name) {
		return fmt.Errorf("team %q: want a namespace name: lower-case letters, digits and '-', at most 63, starting and ending with a letter or digit", name)
	}
	return nil
}

// Validate reports the first field of q that is out of range, naming it.
func (q Quota) Validate() error {
	if err := ValidTeam(q.Team); err != nil {
		return err
	}
	switch {
	case q.Guarantee < 0 || q.Guarantee > MaxQuotaGPUs:
		return fmt.Errorf("team %q: guarantee %d: want 0 to %d GPUs", q.Team, q.Guarantee, MaxQuotaGPUs)
	case q.Limit < 0 || q.Limit > MaxQuotaGPUs:
		return fmt.Errorf("team %q: limit %d: want 0 (no limit) to %d GPUs", q.Team, q.Limit, MaxQuotaGPUs)
	case q.Limit > 0 && q.Limit < q.Guarantee:
		return fmt.Errorf("team %q: limit %d below guarantee %d", q.Team, q.Limit, q.Guarantee)
	case math.IsNaN(q.Weight) || q.Weight < 0 || q.Weight > MaxQuotaWeight:
		return fmt.Errorf("team %q: weight %v: want 0 to %g", q.Team, q.Weight, MaxQuotaWeight)
	}
	return nil
}
