package soak

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vodascheduler/voda/internal/api"
	"github.com/vodascheduler/voda/internal/model"
)

// sseEvent is one server-sent event: its name ("message" when its block
// names none) and its data lines joined by newlines.
type sseEvent struct {
	name string
	data []byte
}

// sseReader reads server-sent events by the rules of the dashboard's
// readEvents (internal/ui/assets/app.js): a block ends at an empty line;
// a line starting with ':' is a comment; a line is FIELD:VALUE, with one
// space after the colon dropped, or a FIELD alone; only event and data
// count, the data lines joined with newlines; a block without data is no
// event. A block cut off by the end of the stream is dropped.
type sseReader struct {
	r *bufio.Reader
	// max bounds one line and one event's data, so that a stream that
	// never ends a line cannot take the client's memory.
	max int
}

// maxEventBytes is the most one event may hold: a snapshot of tens of
// thousands of finished jobs, which the event stream sent before it was
// made to cost O(live jobs), is tens of megabytes.
const maxEventBytes = 256 << 20

func newSSEReader(r io.Reader, max int) *sseReader {
	return &sseReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next returns the next event, or the error that ended the stream (io.EOF
// when it ended between two blocks).
func (s *sseReader) next() (sseEvent, error) {
	ev := sseEvent{name: "message"}
	hasData := false
	for {
		line, err := s.line()
		if err != nil {
			return sseEvent{}, err
		}
		switch {
		case len(line) == 0:
			if hasData {
				return ev, nil
			}
			ev = sseEvent{name: "message"}
			continue
		case line[0] == ':':
			continue
		}
		field, value, found := bytes.Cut(line, []byte(":"))
		if found {
			value = bytes.TrimPrefix(value, []byte(" "))
		}
		switch string(field) {
		case "event":
			ev.name = string(value)
		case "data":
			if hasData {
				ev.data = append(ev.data, '\n')
			}
			ev.data = append(ev.data, value...)
			hasData = true
			if len(ev.data) > s.max {
				return sseEvent{}, fmt.Errorf("an event of over %d bytes", s.max)
			}
		}
	}
}

// line returns the next line without its newline; it is valid until the
// next call.
func (s *sseReader) line() ([]byte, error) {
	frag, err := s.r.ReadSlice('\n')
	if err == nil {
		return frag[:len(frag)-1], nil
	}
	long := append([]byte(nil), frag...)
	for errors.Is(err, bufio.ErrBufferFull) {
		if len(long) > s.max {
			return nil, fmt.Errorf("a line of over %d bytes", s.max)
		}
		frag, err = s.r.ReadSlice('\n')
		long = append(long, frag...)
	}
	switch {
	case err == nil:
		return long[:len(long)-1], nil
	case errors.Is(err, io.EOF) && len(long) > 0:
		return nil, io.ErrUnexpectedEOF
	}
	return nil, err
}

// jobView is what a dashboard keeps of a job.
type jobView struct {
	Name    string `json:"name"`
	Status  string `json:"status"`
	Workers int    `json:"workers"`
}

// sendTimes holds when each job's submission was sent, as Unix
// nanoseconds, by job index; 0 until it is.
type sendTimes []atomic.Int64

// jobIndex is the index of the soak's job named name (jobName's, with
// the server's time suffix), or false for a name the soak did not give.
func jobIndex(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, "soak-")
	if !ok {
		return 0, false
	}
	digits, _, _ := strings.Cut(rest, "-")
	i, err := strconv.Atoi(digits)
	return i, err == nil && i >= 0
}

// jobName is the manifest's name of job i; the server adds the time.
func jobName(i int) string { return fmt.Sprintf("soak-%06d", i) }

// dashboard is one open dashboard: it follows GET /api/v1/events as the
// web dashboard's follow does (internal/ui/assets/app.js): it reads and
// parses every event, keeps the live jobs it learned of, and when the
// stream ends, connects again after 0.5 s (after a failed connection,
// twice as long each time, up to 10 s).
type dashboard struct {
	url     string
	hc      *http.Client
	sent    sendTimes
	answers *answers

	mu sync.Mutex
	// live and running hold the jobs the stream says are live, and of
	// them those running, with their workers.
	live    map[string]bool
	running map[string]int
	// seen says, by job index, whether a job was in an event or a
	// snapshot yet; lags holds, for each job seen first since the last
	// takeLags, the time from its submission.
	seen []bool
	lags []time.Duration
	// allLags are every job's lag, for the whole run's quantiles.
	allLags   []time.Duration
	connected bool
	// snapshots counts the streams that began; ends those that ended
	// while the soak still read them, the last with lastEnd's error.
	snapshots, ends int
	lastEnd         string
	// badEvents are events the dashboard could not parse.
	badEvents []string
	events    int64
	bytes     atomic.Int64
}

func newDashboard(baseURL string, hc *http.Client, sent sendTimes, a *answers) *dashboard {
	return &dashboard{url: baseURL + api.RouteEvents, hc: hc, sent: sent, answers: a,
		live: map[string]bool{}, running: map[string]int{}, seen: make([]bool, len(sent))}
}

// follow reads the stream until ctx ends, connecting again whenever the
// stream ends.
func (d *dashboard) follow(ctx context.Context) {
	delay := 500 * time.Millisecond
	for ctx.Err() == nil {
		if d.stream(ctx) {
			delay = 500 * time.Millisecond
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		delay = min(2*delay, 10*time.Second)
	}
}

// stream reads one stream to its end, and returns whether it was
// answered 200.
func (d *dashboard) stream(ctx context.Context) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.url, nil)
	if err != nil {
		d.answers.add(askEvents, noAnswer, err.Error())
		return false
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := d.hc.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			d.answers.add(askEvents, noAnswer, err.Error())
		}
		return false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		d.answers.add(askEvents, resp.StatusCode, string(body))
		return false
	}
	d.answers.add(askEvents, resp.StatusCode, "")
	events := newSSEReader(&countingReader{r: resp.Body, n: &d.bytes}, maxEventBytes)
	for {
		ev, err := events.next()
		if err != nil {
			d.mu.Lock()
			defer d.mu.Unlock()
			d.connected = false
			if ctx.Err() == nil {
				d.ends++
				d.lastEnd = err.Error()
			}
			return true
		}
		d.handle(ev, time.Now())
	}
}

// handle applies one event as the dashboard's handle does.
func (d *dashboard) handle(ev sseEvent, now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.events++
	switch ev.name {
	case "snapshot":
		var snap struct {
			Jobs []jobView `json:"jobs"`
		}
		if err := json.Unmarshal(ev.data, &snap); err != nil {
			d.bad(ev, err)
			return
		}
		clear(d.live)
		clear(d.running)
		for _, j := range snap.Jobs {
			d.note(j, now)
		}
		d.connected = true
		d.snapshots++
	case "job":
		var je struct {
			Job     *jobView `json:"job"`
			Name    string   `json:"name"`
			Deleted bool     `json:"deleted"`
		}
		if err := json.Unmarshal(ev.data, &je); err != nil {
			d.bad(ev, err)
			return
		}
		if je.Deleted || je.Job == nil {
			delete(d.live, je.Name)
			delete(d.running, je.Name)
			return
		}
		d.note(*je.Job, now)
	}
}

// maxBadEvents is how many unparsable events a dashboard keeps.
const maxBadEvents = 5

func (d *dashboard) bad(ev sseEvent, err error) {
	if len(d.badEvents) < maxBadEvents {
		d.badEvents = append(d.badEvents, fmt.Sprintf("%s event: %v: %.200s", ev.name, err, ev.data))
	}
}

// note records job j as of now: its lag when it is seen the first time,
// and whether it is live and running. Under d.mu.
func (d *dashboard) note(j jobView, now time.Time) {
	if i, ok := jobIndex(j.Name); ok && i < len(d.seen) && !d.seen[i] {
		d.seen[i] = true
		if sent := d.sent[i].Load(); sent != 0 {
			lag := now.Sub(time.Unix(0, sent))
			d.lags = append(d.lags, lag)
			d.allLags = append(d.allLags, lag)
		}
	}
	switch {
	case model.Status(j.Status).Done():
		delete(d.live, j.Name)
		delete(d.running, j.Name)
	case model.Status(j.Status) == model.StatusRunning:
		d.live[j.Name] = true
		d.running[j.Name] = j.Workers
	default:
		d.live[j.Name] = true
		delete(d.running, j.Name)
	}
}

// takeLags returns the lags of the jobs seen first since the last call.
func (d *dashboard) takeLags() []time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	l := d.lags
	d.lags = nil
	return l
}

// pickRunning returns a job the dashboard shows running, at random, and
// its workers; false when it shows none.
func (d *dashboard) pickRunning(r *rand.Rand) (string, int, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.running) == 0 {
		return "", 0, false
	}
	skip := r.IntN(len(d.running))
	for name, workers := range d.running {
		if skip == 0 {
			return name, workers, true
		}
		skip--
	}
	return "", 0, false
}

// dashboardState is what a dashboard shows, for samples and checks.
type dashboardState struct {
	connected       bool
	live            []string
	snapshots, ends int
	lastEnd         string
	missed          int // jobs submitted that it never showed
	events          int64
	bytes           int64
	badEvents       []string
}

func (d *dashboard) state() dashboardState {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := dashboardState{connected: d.connected, snapshots: d.snapshots, ends: d.ends, lastEnd: d.lastEnd,
		events: d.events, bytes: d.bytes.Load(), badEvents: d.badEvents}
	for name := range d.live {
		s.live = append(s.live, name)
	}
	for i, seen := range d.seen {
		if !seen && d.sent[i].Load() != 0 {
			s.missed++
		}
	}
	return s
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	c.n.Add(int64(k))
	return k, err
}

// stalledStream is an event stream whose client never reads: it sends
// its request on a connection with a small receive buffer, so that the
// server's writes block soon, and leaves the answer unread.
type stalledStream struct {
	conn   net.Conn
	opened time.Time
}

func openStalled(addr string) (*stalledStream, error) {
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return nil, fmt.Errorf("connect for a stalled stream: %w", err)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		if err := tc.SetReadBuffer(4 << 10); err != nil {
			conn.Close()
			return nil, fmt.Errorf("stalled stream: small receive buffer: %w", err)
		}
	}
	_ = conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\n\r\n", api.RouteEvents, addr); err != nil {
		conn.Close()
		return nil, fmt.Errorf("stalled stream: send the request: %w", err)
	}
	return &stalledStream{conn: conn, opened: time.Now()}, nil
}

// stalledResult is what became of a stalled stream.
type stalledResult struct {
	opened time.Time
	// status is the answer's status line.
	status string
	// closedAfter is the time from the request to the server's closing
	// the connection, 0 if it did not within the wait.
	closedAfter time.Duration
	// queued is what the server's kernel still held to send when the
	// server closed: the stream's cost after its end, outside the
	// server's memory.
	queued int64
	err    string
}

// end waits for the server to close its side of the connection, up to
// wait after its writes stopped moving (its socket's send queue stopped
// changing: the queue holds what the client's small buffer refused, up to
// the server's send buffer, and only then do the server's writes block)
// and at most maxStallWait in all; then it reads the status line, which
// the small receive buffer holds, and closes the client's side. The client
// cannot see the close: the server's FIN waits behind the data the client
// never read. So it looks at the server's socket in /proc/net/tcp, which
// leaves ESTABLISHED when the server closes it.
func (s *stalledStream) end(wait time.Duration) stalledResult {
	defer s.conn.Close()
	res := stalledResult{opened: s.opened}
	server, client := s.conn.RemoteAddr().String(), s.conn.LocalAddr().String()
	lastQueue, moved := int64(-1), time.Now()
	for {
		sock, err := findTCPSocket("/proc/net/tcp", server, client)
		if err != nil {
			res.err = err.Error()
			break
		}
		if !sock.found || sock.state != tcpEstablished {
			res.closedAfter, res.queued = time.Since(s.opened), sock.txQueue
			break
		}
		if sock.txQueue != lastQueue {
			lastQueue, moved = sock.txQueue, time.Now()
		}
		if time.Since(moved) > wait || time.Since(s.opened) > maxStallWait {
			res.err = fmt.Sprintf("still open on the server's side %v after its send queue last changed (%v after the request), %d bytes queued",
				time.Since(moved).Round(time.Second), time.Since(s.opened).Round(time.Second), sock.txQueue)
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	_ = s.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	head := make([]byte, 64)
	n, _ := io.ReadFull(s.conn, head)
	res.status, _, _ = strings.Cut(string(head[:n]), "\r\n")
	return res
}

// maxStallWait bounds a stalled stream's check however long the server
// takes to fill its send buffer.
const maxStallWait = 5 * time.Minute

// tcpEstablished is the ESTABLISHED state in /proc/net/tcp.
const tcpEstablished = 0x01

// tcpSocket is a socket's line of /proc/net/tcp.
type tcpSocket struct {
	found   bool
	state   int
	txQueue int64
}

// findTCPSocket finds the IPv4 socket whose local address is local and
// remote address remote (both HOST:PORT) in the table at path (proc(5),
// /proc/net/tcp).
func findTCPSocket(path, local, remote string) (tcpSocket, error) {
	l, err := procTCPAddr(local)
	if err != nil {
		return tcpSocket{}, err
	}
	r, err := procTCPAddr(remote)
	if err != nil {
		return tcpSocket{}, err
	}
	table, err := os.ReadFile(path)
	if err != nil {
		return tcpSocket{}, err
	}
	return parseTCPTable(table, l, r)
}

// parseTCPTable finds the socket from local to remote, both in the
// table's spelling, in a /proc/net/tcp table.
func parseTCPTable(table []byte, local, remote string) (tcpSocket, error) {
	for line := range strings.Lines(string(table)) {
		f := strings.Fields(line)
		// sl local_address rem_address st tx_queue:rx_queue ...
		if len(f) < 5 || f[1] != local || f[2] != remote {
			continue
		}
		st, err := strconv.ParseInt(f[3], 16, 32)
		if err != nil {
			return tcpSocket{}, fmt.Errorf("/proc/net/tcp: state %q: %w", f[3], err)
		}
		tx, _, _ := strings.Cut(f[4], ":")
		q, err := strconv.ParseInt(tx, 16, 64)
		if err != nil {
			return tcpSocket{}, fmt.Errorf("/proc/net/tcp: queue %q: %w", f[4], err)
		}
		return tcpSocket{found: true, state: int(st), txQueue: q}, nil
	}
	return tcpSocket{}, nil
}

// procTCPAddr spells an IPv4 HOST:PORT as /proc/net/tcp does: the
// address as the host's 32-bit integer, then the port, in hex.
func procTCPAddr(hostPort string) (string, error) {
	ap, err := netip.ParseAddrPort(hostPort)
	if err != nil || !ap.Addr().Unmap().Is4() {
		return "", fmt.Errorf("not an IPv4 HOST:PORT: %q", hostPort)
	}
	ip := ap.Addr().Unmap().As4()
	return fmt.Sprintf("%08X:%04X", binary.NativeEndian.Uint32(ip[:]), ap.Port()), nil
}
