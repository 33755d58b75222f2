package report

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// TeamRecord is one team's share of a run's GPUs over time: integrals
// over the run of what the team held and what its quota entitled it to,
// from which Summarize derives time averages.
type TeamRecord struct {
	Team string
	// Guarantee, Limit and Weight are the team's quota.
	Guarantee, Limit int
	Weight           float64
	// HeldGPUSeconds integrates the GPUs the team's jobs held (restarting
	// or training).
	HeldGPUSeconds float64
	// EntitledGPUSeconds integrates the team's entitlement: what
	// algorithm.Entitlements gives it for the demands of every team's
	// submitted, unfinished jobs.
	EntitledGPUSeconds float64
	// ActiveSeconds is the time the team had a submitted, unfinished job.
	ActiveSeconds float64
	// ShortSeconds is the time the team held fewer GPUs than
	// min(demand, guarantee), its demand being its unfinished jobs' most
	// GPUs (each at most the cluster), at most the cluster.
	ShortSeconds float64
}

// Reclaim is one stretch of a team held below min(demand, guarantee),
// with a job of it waiting, while another team held more than its
// guarantee: from when that began (the submission that made the team
// short, when one did) until the team held min(demand, guarantee) GPUs,
// or the run's end. Its demand is its unfinished jobs' most GPUs, which
// its own algorithm may not want to use (a job's goodput gains nothing
// past some GPUs, or its estimates reach only so far yet): Running says
// when the composition had done its part, every job of the team running.
type Reclaim struct {
	Team string
	// Start is when the stretch began, Running how long until no job of
	// the team waited (-1: one still waited at the end) and Seconds how
	// long until the team held min(demand, guarantee) GPUs, simulated
	// seconds; a job placed then restarts for the run's restart cost
	// before it trains.
	Start, Running, Seconds float64
	// Resolved is false when the run ended with the team still short.
	Resolved bool
}

// TeamShare is a team's part of a run's summary.
type TeamShare struct {
	Team string `json:"team"`
	// Jobs and Completed count the team's jobs and those that finished.
	Jobs      int `json:"jobs"`
	Completed int `json:"completed"`
	Guarantee int `json:"guarantee"`
	// AvgJCT is over the team's completed jobs.
	AvgJCT float64 `json:"avg_jct_s"`
	// AvgGPUs and AvgEntitled are the GPUs the team held and its
	// entitlement, averaged over the run (from time 0 to its end).
	AvgGPUs     float64 `json:"avg_gpus"`
	AvgEntitled float64 `json:"avg_entitled_gpus"`
	// Share is AvgGPUs / AvgEntitled: 1 when the team held what its quota
	// entitled it to, above 1 when it held GPUs others' entitlements left
	// idle; 0 when it was entitled to nothing.
	Share float64 `json:"share"`
	// ShortFraction is the fraction of the time the team had unfinished
	// jobs that it held fewer GPUs than min(demand, guarantee).
	ShortFraction float64 `json:"short_fraction"`
	// FTFMean and FTFWorst are the mean and the largest finish-time
	// fairness of the team's completed jobs: a job's JCT over its JCT
	// alone on 1/N of the cluster (N teams): its work at its best rate on
	// min(its most GPUs, GPUs/N) GPUs packed onto the fewest nodes, at
	// each epoch the best batch size it may choose (its fixed batch
	// without adaptive batches), from its submission with one restart
	// and no queueing. Above 1: the job finished later than it would
	// have on its team's even share alone.
	FTFMean  float64 `json:"ftf_mean"`
	FTFWorst float64 `json:"ftf_worst"`
	// The record's integrals (TeamRecord) and the run's length, and the
	// sums of the completed jobs' JCTs and FTFs, kept so that means over
	// workloads pool them.
	HeldGPUSeconds     float64 `json:"held_gpu_s"`
	EntitledGPUSeconds float64 `json:"entitled_gpu_s"`
	ActiveSeconds      float64 `json:"active_s"`
	ShortSeconds       float64 `json:"short_s"`
	RunSeconds         float64 `json:"run_s"`
	JCTSum             float64 `json:"jct_sum_s"`
	FTFSum             float64 `json:"ftf_sum"`
}

// teamShares summarises the run's teams: its records, its jobs' JCTs and
// finish-time fairness by team.
func teamShares(run *Run) []TeamShare {
	if len(run.Teams) == 0 {
		return nil
	}
	out := make([]TeamShare, len(run.Teams))
	idx := map[string]int{}
	for i, t := range run.Teams {
		idx[t.Team] = i
		out[i] = TeamShare{Team: t.Team, Guarantee: t.Guarantee, HeldGPUSeconds: t.HeldGPUSeconds,
			EntitledGPUSeconds: t.EntitledGPUSeconds, ActiveSeconds: t.ActiveSeconds, ShortSeconds: t.ShortSeconds, RunSeconds: run.EndTime}
	}
	for _, j := range run.Jobs {
		i, ok := idx[j.Team]
		if !ok {
			continue
		}
		s := &out[i]
		s.Jobs++
		if !j.Done {
			continue
		}
		s.Completed++
		jct := j.End - j.Submit
		s.JCTSum += jct
		if j.AloneJCT > 0 {
			f := jct / j.AloneJCT
			s.FTFSum += f
			s.FTFWorst = max(s.FTFWorst, f)
		}
	}
	for i := range out {
		out[i].finish()
	}
	return out
}

// finish derives the averages from the sums.
func (s *TeamShare) finish() {
	if s.Completed > 0 {
		s.AvgJCT = s.JCTSum / float64(s.Completed)
		s.FTFMean = s.FTFSum / float64(s.Completed)
	}
	if s.RunSeconds > 0 {
		s.AvgGPUs, s.AvgEntitled = s.HeldGPUSeconds/s.RunSeconds, s.EntitledGPUSeconds/s.RunSeconds
	}
	if s.EntitledGPUSeconds > 0 {
		s.Share = s.HeldGPUSeconds / s.EntitledGPUSeconds
	}
	if s.ActiveSeconds > 0 {
		s.ShortFraction = s.ShortSeconds / s.ActiveSeconds
	}
}

// fairness fills the summary's finish-time fairness and reclaim figures
// from its teams and the run's reclaims.
func (s *Summary) fairness(run *Run) {
	n := 0
	sum := 0.0
	for _, t := range s.Teams {
		n += t.Completed
		sum += t.FTFSum
		s.FTFWorst = max(s.FTFWorst, t.FTFWorst)
	}
	if n > 0 {
		s.FTFMean = sum / float64(n)
	}
	total, running := 0.0, 0.0
	for _, r := range run.Reclaims {
		s.Reclaims++
		if !r.Resolved {
			s.Unreclaimed++
		}
		run := r.Running
		if run < 0 {
			run = r.Seconds // still waiting at the end
		}
		total += r.Seconds
		running += run
		s.ReclaimMax = max(s.ReclaimMax, r.Seconds)
		s.ReclaimRunningMax = max(s.ReclaimRunningMax, run)
	}
	if s.Reclaims > 0 {
		s.ReclaimMean = total / float64(s.Reclaims)
		s.ReclaimRunningMean = running / float64(s.Reclaims)
	}
}

// meanTeams pools the i-th summaries' teams over workloads, by name:
// integrals and counts add up, so shares, fractions and means are over
// all the workloads' time and jobs.
func meanTeams(rows [][]Summary, i int) []TeamShare {
	out := pooled(rows, i, func(s Summary) []TeamShare { return s.Teams }, func(t TeamShare) string { return t.Team },
		func(t TeamShare) TeamShare { return TeamShare{Team: t.Team, Guarantee: t.Guarantee} },
		func(o *TeamShare, t TeamShare) {
			o.Jobs += t.Jobs
			o.Completed += t.Completed
			o.HeldGPUSeconds += t.HeldGPUSeconds
			o.EntitledGPUSeconds += t.EntitledGPUSeconds
			o.ActiveSeconds += t.ActiveSeconds
			o.ShortSeconds += t.ShortSeconds
			o.RunSeconds += t.RunSeconds
			o.FTFSum += t.FTFSum
			o.JCTSum += t.JCTSum
			o.FTFWorst = max(o.FTFWorst, t.FTFWorst)
		})
	for k := range out {
		out[k].finish()
	}
	slices.SortFunc(out, func(a, b TeamShare) int { return strings.Compare(a.Team, b.Team) })
	return out
}

// meanFairness pools the finish-time fairness and reclaims of the i-th
// summaries over workloads into m.
func meanFairness(m *Summary, rows [][]Summary, i int) {
	n, sum, reclaimed, running := 0, 0.0, 0.0, 0.0
	for _, row := range rows {
		s := row[i]
		for _, t := range s.Teams {
			n += t.Completed
			sum += t.FTFSum
		}
		m.FTFWorst = max(m.FTFWorst, s.FTFWorst)
		m.Reclaims += s.Reclaims
		m.Unreclaimed += s.Unreclaimed
		reclaimed += s.ReclaimMean * float64(s.Reclaims)
		running += s.ReclaimRunningMean * float64(s.Reclaims)
		m.ReclaimMax = max(m.ReclaimMax, s.ReclaimMax)
		m.ReclaimRunningMax = max(m.ReclaimRunningMax, s.ReclaimRunningMax)
	}
	if n > 0 {
		m.FTFMean = sum / float64(n)
	}
	if m.Reclaims > 0 {
		m.ReclaimMean = reclaimed / float64(m.Reclaims)
		m.ReclaimRunningMean = running / float64(m.Reclaims)
	}
}

// WriteTeams writes, for each summary with teams, a row per team: its
// jobs, average JCT, the GPUs it held and was entitled to on average,
// their ratio, the time it was short of min(demand, guarantee) with
// jobs waiting, and its finish-time fairness; then a line per summary
// with its reclaims. Summaries without teams are left out.
func WriteTeams(w io.Writer, sums []Summary) error {
	t := table{header: []string{"algorithm", "placer", "team", "guarantee", "done", "avg JCT s", "avg GPUs", "entitled",
		"share %", "short %", "FTF mean", "FTF worst"}, left: 3}
	var notes []string
	for _, s := range sums {
		if len(s.Teams) == 0 {
			continue
		}
		for _, ts := range append(slices.Clone(s.Teams), TeamShare{Team: "all", FTFMean: s.FTFMean, FTFWorst: s.FTFWorst, Completed: -1}) {
			if ts.Completed < 0 {
				t.rows = append(t.rows, []string{s.Algorithm, s.Placer, ts.Team, "", fmt.Sprintf("%d/%d", s.Completed, s.Jobs),
					fmt.Sprintf("%.1f", s.AvgJCT), "", "", "", "", fmt.Sprintf("%.2f", ts.FTFMean), fmt.Sprintf("%.2f", ts.FTFWorst)})
				continue
			}
			t.rows = append(t.rows, []string{s.Algorithm, s.Placer, ts.Team, fmt.Sprint(ts.Guarantee),
				fmt.Sprintf("%d/%d", ts.Completed, ts.Jobs), fmt.Sprintf("%.1f", ts.AvgJCT),
				fmt.Sprintf("%.2f", ts.AvgGPUs), fmt.Sprintf("%.2f", ts.AvgEntitled), fmt.Sprintf("%.1f", 100*ts.Share),
				fmt.Sprintf("%.1f", 100*ts.ShortFraction), fmt.Sprintf("%.2f", ts.FTFMean), fmt.Sprintf("%.2f", ts.FTFWorst)})
		}
		notes = append(notes, reclaimLine(s))
	}
	if len(t.rows) == 0 {
		return nil
	}
	if err := writeTable(w, t); err != nil {
		return err
	}
	for _, n := range notes {
		if _, err := io.WriteString(w, n+"\n"); err != nil {
			return fmt.Errorf("write teams: %w", err)
		}
	}
	return nil
}

// reclaimLine describes a summary's reclaims in one line.
func reclaimLine(s Summary) string {
	if s.Reclaims == 0 {
		return fmt.Sprintf("%s/%s: no reclaims (no team was short while another borrowed)", s.Algorithm, s.Placer)
	}
	open := ""
	if s.Unreclaimed > 0 {
		open = fmt.Sprintf(", %d still short at the end", s.Unreclaimed)
	}
	return fmt.Sprintf("%s/%s: %d reclaims: every job of the team running within %.1f s (mean %.1f s), "+
		"the team at min(demand, guarantee) within %.1f s (mean %.1f s), before the restart%s",
		s.Algorithm, s.Placer, s.Reclaims, s.ReclaimRunningMax, s.ReclaimRunningMean, s.ReclaimMax, s.ReclaimMean, open)
}
