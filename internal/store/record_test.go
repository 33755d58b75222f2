package store

import (
	"math"
	"testing"

	"github.com/vodascheduler/voda/internal/goodput"
)

// A stored throughput model that is not a valid one (a damaged record)
// reads as none, so that no reply is computed from it.
func TestDecodeFit(t *testing.T) {
	good := goodput.Params{AlphaC: 0.01, BetaC: 0.001, AlphaR: 0.05, Gamma: 1.2}
	if got := decodeFit(encodeFit(&good)); got == nil || *got != good {
		t.Errorf("round trip of %+v: %+v", good, got)
	}
	for name, p := range map[string]goodput.Params{
		"negative": {AlphaC: -1, BetaC: 0.001, Gamma: 1.2},
		"NaN":      {AlphaC: math.NaN(), BetaC: 0.001, Gamma: 1.2},
		"no gamma": {AlphaC: 0.01, BetaC: 0.001},
	} {
		if got := decodeFit(encodeFit(&p)); got != nil {
			t.Errorf("%s: %+v decoded as %+v, want none", name, p, got)
		}
	}
	if decodeFit(nil) != nil || encodeFit(nil) != nil {
		t.Error("no fit should stay none")
	}
}
