package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vodascheduler/voda/internal/api"
)

// BenchmarkEventStreamsAt100k measures, rather than asserts, what event
// streams cost the binary on a store of VODA_SCALE_FINISHED (default
// 100,000) finished and VODA_SCALE_LIVE (default 1,000) live jobs, built
// with the store's API (buildScaleStore) and served with simulated nodes,
// whose schedulers keep working on the live jobs. It reports the server
// process's CPU time per second over windows of VODA_SCALE_WINDOW
// seconds (default 20): none open, one idle dashboard (a client that
// reads its stream and does nothing else, as the dashboard does while
// nobody touches it), ten, none again; each figure less the mean of the
// two windows with none open is the streams' own cost. Then it opens
// VODA_SCALE_SILENT (default 100; 0 for none) streams whose clients
// never read (4 KiB receive buffers, so that what the server writes
// stays in the server) and reports the server's resident memory before,
// after and at its peak over 10 s, and the latency of GET /api/v1/jobs
// meanwhile. It takes minutes:
//
//	go test ./test/e2e -run '^$' -bench BenchmarkEventStreamsAt100k -benchtime 1x -timeout 30m -v
func BenchmarkEventStreamsAt100k(b *testing.B) {
	needProc(b)
	finished := envInt(b, "VODA_SCALE_FINISHED", 100000)
	live := envInt(b, "VODA_SCALE_LIVE", 1000)
	window := time.Duration(envInt(b, "VODA_SCALE_WINDOW", 20)) * time.Second
	silent := envInt(b, "VODA_SCALE_SILENT", 100)
	dir := b.TempDir()
	built := time.Now()
	buildScaleStore(b, dir, finished, live)
	b.Logf("built a store of %d finished and %d live jobs in %v", finished, live, time.Since(built).Round(time.Second))
	bin := buildForBench(b)
	for b.Loop() {
		srv := startBenchServer(b, bin, []string{"--data-dir", dir, "--sim-nodes", "v100=4x8", "--log-level", "warn",
			"--finished-retention", "0", "--max-finished-jobs", "0",
			"--max-event-streams", strconv.Itoa(2 * silent), "--max-event-streams-per-user", strconv.Itoa(2 * silent)})
		waitReady(b, srv.Addr)
		pid := srv.PID()
		// cpuPerSecond measures a window with streams open, which must
		// all stay open, and logs the event streams' reads of the store
		// in it.
		cpuPerSecond := func(streams int) float64 {
			polls0, pollSec0 := metricAt(b, srv.Addr, pollCount), metricAt(b, srv.Addr, pollSum)
			cpu0, wall0 := procCPU(b, pid), time.Now()
			time.Sleep(window)
			cpu := float64((procCPU(b, pid) - cpu0).Microseconds()) / 1e3 / time.Since(wall0).Seconds()
			if n := metricAt(b, srv.Addr, "voda_event_streams"); n != float64(streams) {
				b.Fatalf("voda_event_streams %v at the end of the window, want %d", n, streams)
			}
			b.Logf("%d streams: %.1f ms/s of CPU; %.0f reads of the store for them, %.0f ms", streams, cpu,
				metricAt(b, srv.Addr, pollCount)-polls0, (metricAt(b, srv.Addr, pollSum)-pollSec0)*1e3)
			return cpu
		}
		// A stream's first seconds (its snapshot) are not its idle cost.
		const settle = 3 * time.Second
		none := cpuPerSecond(0)
		one := openReaders(b, srv.Addr, 1)
		time.Sleep(settle)
		oneCPU := cpuPerSecond(1)
		ten := openReaders(b, srv.Addr, 9)
		time.Sleep(settle)
		tenCPU := cpuPerSecond(10)
		one()
		ten()
		waitMetric(b, srv.Addr, "voda_event_streams", 0)
		time.Sleep(settle)
		noneAgain := cpuPerSecond(0)
		base := (none + noneAgain) / 2
		b.Logf("server CPU: %.1f ms/s with no stream, %.1f with one idle dashboard, %.1f with ten, %.1f with none again; "+
			"the streams' own: %.1f ms/s for one, %.1f for ten (each less %.1f)",
			none, oneCPU, tenCPU, noneAgain, oneCPU-base, tenCPU-base, base)
		b.ReportMetric(none, "none-cpu-ms/s")
		b.ReportMetric(oneCPU-base, "one-dashboard-cpu-ms/s")
		b.ReportMetric(tenCPU-base, "ten-dashboards-cpu-ms/s")

		list := "http://" + srv.Addr + api.RouteJobs
		if silent == 0 {
			srv.stop()
			continue
		}
		lat, _ := callTimes(b, list, 10)
		rss0 := procRSSKiB(b, pid)
		for range silent {
			silentStream(b, srv.Addr)
		}
		waitMetric(b, srv.Addr, "voda_event_streams", float64(silent))
		peak := procRSSKiB(b, pid)
		for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
			peak = max(peak, procRSSKiB(b, pid))
		}
		latDuring, _ := callTimes(b, list, 10)
		rss := procRSSKiB(b, pid)
		peak = max(peak, rss)
		b.Logf("%d streams that never read: server RSS %d MiB -> %d MiB (peak %d MiB); GET %s p50 %v -> %v, max %v -> %v",
			silent, rss0/1024, rss/1024, peak/1024, api.RouteJobs, lat[4], latDuring[4], lat[9], latDuring[9])
		b.ReportMetric(float64(peak-rss0)/1024, "never-read-rss-growth-MiB")
		srv.stop()
	}
}

const (
	pollCount = "voda_event_poll_duration_seconds_count"
	pollSum   = "voda_event_poll_duration_seconds_sum"
)

// procCPU is a process's user and system CPU time so far (/proc/PID/stat,
// in clock ticks of 10 ms).
func procCPU(b *testing.B, pid int) time.Duration {
	b.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// The command name, in parentheses, may hold spaces: the fields
	// counted are those after it (utime and stime are the 14th and 15th).
	_, rest, ok := strings.Cut(string(raw), ") ")
	f := strings.Fields(rest)
	if !ok || len(f) < 13 {
		b.Fatalf("/proc/%d/stat %q", pid, raw)
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			b.Fatalf("/proc/%d/stat %q: %v", pid, raw, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

// openReaders opens n streams on addr whose clients read every event,
// once each has its snapshot, and returns what closes them.
func openReaders(b *testing.B, addr string, n int) (closeAll func()) {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	snapshots := make(chan struct{}, n)
	for range n {
		req, err := http.NewRequestWithContext(ctx, "GET", "http://"+addr+api.RouteEvents, nil)
		if err != nil {
			b.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("GET %s: %s", api.RouteEvents, resp.Status)
		}
		go func() {
			defer resp.Body.Close()
			// Lines are read in pieces: a snapshot's data line holds
			// every job it sends, whatever its size.
			r := bufio.NewReaderSize(resp.Body, 64<<10)
			for lineStart := true; ; {
				piece, err := r.ReadSlice('\n')
				if lineStart && string(piece) == "event: snapshot\n" {
					snapshots <- struct{}{}
				}
				if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
					return
				}
				lineStart = err == nil
			}
		}()
	}
	timeout := time.After(time.Minute)
	for range n {
		select {
		case <-snapshots:
		case <-timeout:
			b.Fatal("the streams' snapshots were not read within a minute")
		}
	}
	return cancel
}

// silentStream opens a stream on addr whose client reads its first byte
// and nothing more, with a 4 KiB receive buffer so that what the server
// writes stays in the server, as with a client far away, rather than in
// loopback's buffers of megabytes. The connection closes with b.
func silentStream(b *testing.B, addr string) {
	b.Helper()
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var err error
		if cerr := rc.Control(func(fd uintptr) {
			err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		}); cerr != nil {
			return cerr
		}
		return err
	}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, "GET "+api.RouteEvents+" HTTP/1.1\r\nHost: "+addr+"\r\n\r\n"); err != nil {
		b.Fatal(err)
	}
	if err := c.SetReadDeadline(time.Now().Add(time.Minute)); err != nil {
		b.Fatal(err)
	}
	if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
		b.Fatalf("the stream's first byte: %v", err)
	}
}

// waitMetric waits up to a minute for sample's value on addr's metrics.
func waitMetric(b *testing.B, addr, sample string, want float64) {
	b.Helper()
	var got float64
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if got = metricAt(b, addr, sample); got == want {
			return
		}
	}
	b.Fatalf("%s is %v after a minute, want %v", sample, got, want)
}
