package sim

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/vodascheduler/voda/internal/sim/workload"
)

// Workload is a named list of jobs to replay.
type Workload struct {
	Name string
	Jobs []workload.Job
}

// Generated returns the synthetic workload workload.Generate makes,
// named after its size and seed.
func Generated(opts workload.GenOptions) Workload {
	return Workload{Name: fmt.Sprintf("generated-%d-seed%d", opts.Jobs, opts.Seed), Jobs: workload.Generate(opts)}
}

// LoadWorkloads reads the workload file at path, or every *.csv file in
// the directory at path in name order, each named after its file without
// the extension. format and opts are as workload.Read takes them.
func LoadWorkloads(path, format string, opts workload.Options) ([]Workload, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("workload: %w", err)
	}
	paths := []string{path}
	if st.IsDir() {
		if paths, err = filepath.Glob(filepath.Join(path, "*.csv")); err != nil {
			return nil, err
		}
		if len(paths) == 0 {
			return nil, fmt.Errorf("workload: no *.csv files in %s", path)
		}
		sort.Strings(paths)
	}
	out := make([]Workload, 0, len(paths))
	for _, p := range paths {
		jobs, err := workload.Read(p, format, opts)
		if err != nil {
			return nil, err
		}
		out = append(out, Workload{Name: strings.TrimSuffix(filepath.Base(p), filepath.Ext(p)), Jobs: jobs})
	}
	return out, nil
}
