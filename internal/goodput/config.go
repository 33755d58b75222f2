package goodput

// Config is one configuration's measured step times as they are stored:
// Nodes and Workers (replicas), Local samples per worker per micro-step,
// Accum extra accumulation steps, and Seconds the sum of N measured
// iteration times. A job's reports keep their configurations in this form
// (progress.Goodput), and an application's history keeps its jobs'.
type Config struct {
	Nodes   int     `json:"nodes"`
	Workers int     `json:"workers"`
	Local   int     `json:"local"`
	Accum   int     `json:"accum"`
	Seconds float64 `json:"seconds"`
	N       int     `json:"n"`
}

// Obs is the configuration with its mean iteration time.
func (c Config) Obs() Obs {
	return Obs{Nodes: c.Nodes, Replicas: c.Workers, Atomic: c.Local, Accum: c.Accum, Iteration: c.Seconds / float64(max(c.N, 1))}
}

// Valid reports whether a stored configuration can enter a fit.
func (c Config) Valid() bool { return c.N >= 1 && c.Obs().Valid() }

// Add folds one measurement o into configs: into o's configuration when
// it is there, else as a new one at the end unless MaxConfigs are held.
// It reports whether the configuration is new.
func Add(configs []Config, o Obs) ([]Config, bool) {
	for i := range configs {
		c := &configs[i]
		if c.Nodes == o.Nodes && c.Workers == o.Replicas && c.Local == o.Atomic && c.Accum == o.Accum {
			c.Seconds += o.Iteration
			c.N++
			return configs, false
		}
	}
	if len(configs) >= MaxConfigs {
		return configs, false
	}
	return append(configs, Config{Nodes: o.Nodes, Workers: o.Replicas, Local: o.Atomic, Accum: o.Accum, Seconds: o.Iteration, N: 1}), true
}
