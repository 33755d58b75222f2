package kube

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vodascheduler/voda/internal/jobspec"
)

// Progress read from logs, for jobs whose code cannot report
// (jobspec.AnnotationProgressLog, docs/progress.md): every LogInterval the
// leader reads the tail of each such running job's launcher log through
// the pods/log API, takes the last line the job's pattern matches, and
// sends what it says through the same ingestion as the jobs' own reports.
// The launcher is the MPIJob's Launcher, or the PyTorchJob's Master (the
// pod the operator gives the job-role master), else its Worker 0.

// LogReport is what one read of a job's log found, in the terms of a
// progress report (docs/progress.md): the generation names the run, and
// the workers and nodes are the placement Voda gave it.
type LogReport struct {
	Generation     string
	Workers, Nodes int
	// Epoch is the epoch reached; TotalEpochs the epochs in all, 0 when the
	// log does not say.
	Epoch, TotalEpochs float64
}

// DefaultLogInterval is how often a job's log is read.
const DefaultLogInterval = time.Minute

// Bounds of one log read: the last logTailLines lines, at most
// logLimitBytes, within logTimeout.
const (
	logTailLines  = 500
	logLimitBytes = 256 << 10
	logTimeout    = 10 * time.Second
)

// maxLogEpochs bounds the numbers read, as the reports' epochs are.
const maxLogEpochs = 1e6

// labelReplicaType is the replica type both operators put on pods.
const labelReplicaType = "training.kubeflow.org/replica-type"

// logReading is what a Pool keeps of a job whose progress is in its log.
type logReading struct {
	pattern *regexp.Regexp
	// placements counts the placements applied to the job in this term
	// (start, resize, migration); with the launcher pod and its restarts
	// it makes the reports' generation.
	placements int
	// sent is the generation and epoch last sent, so that an unchanged
	// log sends nothing (a repeated epoch would measure a zero rate).
	sentGeneration string
	sentEpoch      float64
}

// setLogPattern compiles a job's pattern when it starts; a pattern the
// API let through always compiles, but a record written by another
// version might not: then the job is not read.
func (pool *Pool) setLogPattern(j *trackedJob, name, pattern string) {
	if pattern == "" {
		j.log = nil
		return
	}
	re, why := jobspec.CompileProgressLog(pattern)
	if why != "" {
		pool.log.Warn("job's progress-log pattern is invalid; not reading its log", "job", name, "reason", why)
		j.log = nil
		return
	}
	if j.log == nil {
		j.log = &logReading{}
	}
	j.log.pattern = re
	j.log.placements++
}

// logTarget is a running job whose log is read, as of one round.
type logTarget struct {
	name, namespace string
	pattern         *regexp.Regexp
	placements      int
	workers, nodes  int
}

// readLogs reads each running job's log once, in turn.
func (pool *Pool) readLogs(ctx context.Context, sink func(context.Context, string, LogReport) error) {
	pool.mu.Lock()
	var targets []logTarget
	for name, j := range pool.jobs {
		if j.log == nil || j.want == nil || j.halting || j.gone || j.reported || j.namespace == "" {
			continue
		}
		targets = append(targets, logTarget{name: name, namespace: j.namespace, pattern: j.log.pattern,
			placements: j.log.placements, workers: j.want.Workers(), nodes: len(j.want)})
	}
	pool.mu.Unlock()
	for _, t := range targets {
		if ctx.Err() != nil {
			return
		}
		if err := pool.readLog(ctx, sink, t); err != nil {
			pool.log.Warn("read progress from the job's log; trying again next round", "job", t.name, "err", err)
		}
	}
}

// readLog reads one job's launcher log and sends what its last matching
// line says, if that changed since last sent.
func (pool *Pool) readLog(ctx context.Context, sink func(context.Context, string, LogReport) error, t logTarget) error {
	ctx, cancel := context.WithTimeout(ctx, logTimeout)
	defer cancel()
	pod, err := pool.launcherPod(ctx, t.namespace, t.name)
	if err != nil {
		return err
	}
	container := pod.Spec.Containers[0].Name
	tail, limit := int64(logTailLines), int64(logLimitBytes)
	rc, err := pool.client.clientset.CoreV1().Pods(t.namespace).GetLogs(pod.Name, &corev1.PodLogOptions{
		Container: container, TailLines: &tail, LimitBytes: &limit,
	}).Stream(ctx)
	if err != nil {
		return fmt.Errorf("read log of pod %s: %w", pod.Name, err)
	}
	defer rc.Close()
	// The API server passes LimitBytes on; a kubelet that ignored it
	// still sends no more than this reads.
	data, err := io.ReadAll(io.LimitReader(rc, logLimitBytes))
	if err != nil {
		return fmt.Errorf("read log of pod %s: %w", pod.Name, err)
	}
	epoch, total, ok := lastProgress(data, t.pattern)
	if !ok {
		return nil
	}
	gen := logGeneration(pod, container, t.workers, t.placements)
	pool.mu.Lock()
	j, tracked := pool.jobs[t.name]
	unchanged := !tracked || j.log == nil || j.log.sentGeneration == gen && j.log.sentEpoch == epoch
	pool.mu.Unlock()
	if unchanged {
		return nil
	}
	r := LogReport{Generation: gen, Workers: t.workers, Nodes: t.nodes, Epoch: epoch, TotalEpochs: total}
	if err := sink(ctx, t.name, r); err != nil {
		return fmt.Errorf("ingest progress read from the log: %w", err)
	}
	pool.mu.Lock()
	if j, ok := pool.jobs[t.name]; ok && j.log != nil {
		j.log.sentGeneration, j.log.sentEpoch = gen, epoch
	}
	pool.mu.Unlock()
	pool.log.Debug("progress read from the job's log", "job", t.name, "epoch", epoch, "total", total, "generation", gen)
	return nil
}

// launcherPod finds the pod whose log tells a job's progress: the one
// its operator gives the job-role launcher or master, else Worker 0.
func (pool *Pool) launcherPod(ctx context.Context, ns, job string) (*corev1.Pod, error) {
	pods, err := pool.client.clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: labelJobName + "=" + job})
	if err != nil {
		return nil, fmt.Errorf("find the launcher: %w", err)
	}
	var best *corev1.Pod
	rank := 0
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp != nil || len(p.Spec.Containers) == 0 || p.Spec.NodeName == "" {
			continue
		}
		r := 0
		switch {
		case p.Labels[labelJobRole] == "launcher" || p.Labels[labelJobRole] == "master":
			r = 3
		case strings.EqualFold(p.Labels[labelReplicaType], "master"):
			r = 2
		case p.Labels[LabelReplicaIndex] == "0":
			r = 1
		}
		if r > rank {
			best, rank = p, r
		}
	}
	if best == nil {
		return nil, errors.New("no launcher, master or worker 0 pod on a node yet")
	}
	return best, nil
}

// logGeneration names the run a log belongs to: a new launcher pod, a
// restart of its container, a new worker count or a new placement all
// start another.
func logGeneration(pod *corev1.Pod, container string, workers, placements int) string {
	restarts := int32(0)
	for _, s := range pod.Status.ContainerStatuses {
		if s.Name == container {
			restarts = s.RestartCount
		}
	}
	uid := string(pod.UID)
	if len(uid) > 8 {
		uid = uid[:8]
	}
	return fmt.Sprintf("log-%s-%d-w%d-p%d", uid, restarts, workers, placements)
}

// lastProgress finds the last line of data that pattern matches and
// returns its epoch and total (0 when the pattern has no "total" group or
// it did not match). A match whose numbers are not finite, negative or
// over the reports' limits is skipped.
func lastProgress(data []byte, pattern *regexp.Regexp) (epoch, total float64, ok bool) {
	ei, ti := pattern.SubexpIndex(jobspec.LogGroupEpoch), pattern.SubexpIndex(jobspec.LogGroupTotal)
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), logLimitBytes)
	for sc.Scan() {
		m := pattern.FindSubmatch(sc.Bytes())
		if m == nil || m[ei] == nil {
			continue
		}
		e, err := strconv.ParseFloat(string(m[ei]), 64)
		if err != nil || !(e >= 0 && e <= maxLogEpochs) {
			continue
		}
		tot := 0.0
		if ti >= 0 && m[ti] != nil {
			tot, err = strconv.ParseFloat(string(m[ti]), 64)
			if err != nil || !(tot > 0 && tot <= maxLogEpochs) || e > tot {
				continue
			}
		}
		epoch, total, ok = e, tot, true
	}
	return epoch, total, ok
}
