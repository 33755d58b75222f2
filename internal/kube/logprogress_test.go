package kube

import (
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vodascheduler/voda/internal/jobspec"
)

func mustPattern(t testing.TB, p string) *regexp.Regexp {
	t.Helper()
	re, why := jobspec.CompileProgressLog(p)
	if why != "" {
		t.Fatalf("pattern %q: %s", p, why)
	}
	return re
}

func TestLastProgress(t *testing.T) {
	const withTotal = `Epoch (?P<epoch>[0-9.e+-]+)/(?P<total>[0-9.e+-]+)`
	for _, c := range []struct {
		name, pattern, log string
		epoch, total       float64
		ok                 bool
	}{
		{"no line matches", withTotal, "starting\nloading data\n", 0, 0, false},
		{"empty log", withTotal, "", 0, 0, false},
		{"the last match counts", withTotal, "Epoch 1/10 loss 3\nEpoch 2/10 loss 2\nvalidating\n", 2, 10, true},
		{"fractional epoch", withTotal, "Epoch 2.5/10\n", 2.5, 10, true},
		{"no total group", `epoch=(?P<epoch>\d+)`, "epoch=3 step=40\nepoch=4 step=50", 4, 0, true},
		{"optional total absent on the line", `Epoch (?P<epoch>\d+)(/(?P<total>\d+))?`, "Epoch 7\n", 7, 0, true},
		{"epoch above total is skipped", withTotal, "Epoch 3/10\nEpoch 12/10\n", 3, 10, true},
		{"NaN and Inf are skipped", withTotal, "Epoch 3/10\nEpoch NaN/10\nEpoch 4/Inf\n", 3, 10, true},
		{"negative epoch is skipped", withTotal, "Epoch 3/10\nEpoch -1/10\n", 3, 10, true},
		{"absurd epoch is skipped", withTotal, "Epoch 3/10\nEpoch 1e300/1e301\n", 3, 10, true},
		{"zero total is skipped", withTotal, "Epoch 0/0\n", 0, 0, false},
		{"CRLF lines", withTotal, "Epoch 1/4\r\nEpoch 2/4\r\n", 2, 4, true},
		{"a line longer than a scanner's default buffer", withTotal, strings.Repeat("x", 100_000) + " Epoch 5/9\n", 5, 9, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			epoch, total, ok := lastProgress([]byte(c.log), mustPattern(t, c.pattern))
			if epoch != c.epoch || total != c.total || ok != c.ok {
				t.Errorf("lastProgress = %v, %v, %v; want %v, %v, %v", epoch, total, ok, c.epoch, c.total, c.ok)
			}
		})
	}
}

func FuzzLastProgress(f *testing.F) {
	f.Add("Epoch 1/10\nEpoch 2/10\n")
	f.Add("Epoch 1e5/1e6\n\x00\xff")
	f.Add(strings.Repeat("Epoch 9/9 ", 1000))
	re := mustPattern(f, `Epoch (?P<epoch>[0-9.e+-]+)/(?P<total>[0-9.e+-]+)`)
	f.Fuzz(func(t *testing.T, log string) {
		epoch, total, ok := lastProgress([]byte(log), re)
		if !ok {
			return
		}
		if !(epoch >= 0 && epoch <= maxLogEpochs && total > 0 && total <= maxLogEpochs && epoch <= total) {
			t.Errorf("lastProgress(%q) = %v, %v: out of range", log, epoch, total)
		}
	})
}

func TestLogGeneration(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "0123456789abcdef"}}
	pod.Spec.Containers = []corev1.Container{{Name: "launcher"}}
	base := logGeneration(pod, "launcher", 4, 1)
	restarted := pod.DeepCopy()
	restarted.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "launcher", RestartCount: 1}}
	other := pod.DeepCopy()
	other.UID = "fedcba9876543210"
	for name, gen := range map[string]string{
		"another worker count":  logGeneration(pod, "launcher", 2, 1),
		"another placement":     logGeneration(pod, "launcher", 4, 2),
		"a restarted container": logGeneration(restarted, "launcher", 4, 1),
		"another launcher pod":  logGeneration(other, "launcher", 4, 1),
	} {
		if gen == base {
			t.Errorf("%s: generation %q is the same as before", name, gen)
		}
	}
	if again := logGeneration(pod.DeepCopy(), "launcher", 4, 1); again != base {
		t.Errorf("the same run: %q, then %q", base, again)
	}
}
