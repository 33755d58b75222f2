package perfmodel

import "fmt"

// Parametric is a data-free model: one epoch is EpochSeconds of work on one
// GPU, and k workers on n nodes go k/(1+Serial*(k-1)) / (1+CrossNode*(n-1))
// times as fast: Amdahl's law, slowed further for every node the
// all-reduce has to cross. It stands in for applications no profile covers.
type Parametric struct {
	App string
	// Epochs is the default number of epochs.
	Epochs int
	// EpochSeconds is the time of one epoch on one GPU.
	EpochSeconds float64
	// Serial is Amdahl's serial fraction, in [0, 1].
	Serial float64
	// CrossNode is the slowdown per extra node spanned, in [0, 1).
	CrossNode float64
	// MaxGPUs caps the useful worker count; 0 means 64.
	MaxGPUs int
}

// Builtin parametric applications, named after the kinds of jobs they
// resemble. "linear" scales perfectly and suits duration-only traces when
// nothing is known about scaling.
func BuiltinParametric() []*Parametric {
	return []*Parametric{
		{App: "linear", Epochs: 100, EpochSeconds: 60},
		{App: "amdahl", Epochs: 100, EpochSeconds: 60, Serial: 0.05, CrossNode: 0.05},
		{App: "resnet50", Epochs: 90, EpochSeconds: 600, Serial: 0.02, CrossNode: 0.08},
		{App: "bert", Epochs: 10, EpochSeconds: 1800, Serial: 0.04, CrossNode: 0.15},
		{App: "transformer", Epochs: 40, EpochSeconds: 900, Serial: 0.03, CrossNode: 0.12},
		{App: "ncf", Epochs: 20, EpochSeconds: 30, Serial: 0.4, CrossNode: 0.3, MaxGPUs: 8},
	}
}

// Validate reports an out-of-range parameter.
func (m *Parametric) Validate() error {
	switch {
	case m.App == "":
		return fmt.Errorf("parametric model: empty name")
	case m.Epochs < 1:
		return fmt.Errorf("parametric model %s: epochs %d must be at least 1", m.App, m.Epochs)
	case !(m.EpochSeconds > 0):
		return fmt.Errorf("parametric model %s: epoch seconds must be positive", m.App)
	case m.Serial < 0 || m.Serial > 1:
		return fmt.Errorf("parametric model %s: serial fraction %g outside [0, 1]", m.App, m.Serial)
	case m.CrossNode < 0 || m.CrossNode >= 1:
		return fmt.Errorf("parametric model %s: cross-node penalty %g outside [0, 1)", m.App, m.CrossNode)
	}
	return nil
}

// Name implements Model.
func (m *Parametric) Name() string { return m.App }

// DefaultEpochs implements Model.
func (m *Parametric) DefaultEpochs() int { return m.Epochs }

// DefaultBatch implements Model; batch size plays no part here.
func (m *Parametric) DefaultBatch() int { return 0 }

// MaxWorkers implements Model.
func (m *Parametric) MaxWorkers(int) int {
	if m.MaxGPUs > 0 {
		return m.MaxGPUs
	}
	return 64
}

// EpochProgress implements Model: progress is counted in one-GPU seconds.
func (m *Parametric) EpochProgress(e int) float64 { return float64(max(e, 0)) * m.EpochSeconds }

// Speedup returns the speedup of k workers spread over n nodes.
func (m *Parametric) Speedup(k, n int) float64 {
	if k <= 0 {
		return 0
	}
	if mg := m.MaxWorkers(0); k > mg {
		k = mg
	}
	s := float64(k) / (1 + m.Serial*float64(k-1))
	if n > 1 {
		s /= 1 + m.CrossNode*float64(n-1)
	}
	return s
}

// Rate implements Model.
func (m *Parametric) Rate(placement []int, _ int, _ int) (float64, error) {
	k, n := 0, 0
	for _, w := range placement {
		if w > 0 {
			k += w
			n++
		}
	}
	return m.Speedup(k, n), nil
}
