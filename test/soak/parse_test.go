package soak

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// readAllEvents reads every event of stream, and the error that ended it.
func readAllEvents(stream string, max int) ([]sseEvent, error) {
	r := newSSEReader(strings.NewReader(stream), max)
	var out []sseEvent
	for {
		ev, err := r.next()
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
}

func TestSSEReader(t *testing.T) {
	long := strings.Repeat("x", 100<<10) // longer than the reader's buffer
	tests := []struct {
		name    string
		stream  string
		want    []sseEvent
		wantErr error
	}{
		{name: "the server's events", stream: "event: snapshot\ndata: {\"jobs\":[]}\n\n: heartbeat\n\nevent: job\ndata: {}\n\n",
			want: []sseEvent{{"snapshot", []byte(`{"jobs":[]}`)}, {"job", []byte(`{}`)}}, wantErr: io.EOF},
		{name: "no name is message", stream: "data: 1\n\n", want: []sseEvent{{"message", []byte("1")}}, wantErr: io.EOF},
		{name: "data lines joined", stream: "data: a\ndata:b\ndata:  c\n\n",
			want: []sseEvent{{"message", []byte("a\nb\n c")}}, wantErr: io.EOF},
		{name: "a field alone", stream: "data\nevent\n\n", want: []sseEvent{{"", []byte("")}}, wantErr: io.EOF},
		{name: "no data, no event; the name does not carry over", stream: "event: job\n\ndata: 2\n\n",
			want: []sseEvent{{"message", []byte("2")}}, wantErr: io.EOF},
		{name: "unknown fields and blank lines", stream: "\n\nid: 7\nretry: 10\nevent: job\ndata: 3\n\n\n",
			want: []sseEvent{{"job", []byte("3")}}, wantErr: io.EOF},
		{name: "a long line", stream: "event: snapshot\ndata: " + long + "\n\n",
			want: []sseEvent{{"snapshot", []byte(long)}}, wantErr: io.EOF},
		{name: "cut off in a line", stream: "data: 1\n\ndata: 2", want: []sseEvent{{"message", []byte("1")}}, wantErr: io.ErrUnexpectedEOF},
		{name: "cut off between lines", stream: "data: 1\n\ndata: 2\n", want: []sseEvent{{"message", []byte("1")}}, wantErr: io.EOF},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readAllEvents(tc.stream, maxEventBytes)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(sseEvent{}), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("events (-want,+got):\n%s", diff)
			}
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("ended with %v, want %v", err, tc.wantErr)
			}
		})
	}
}

func TestSSEReaderBound(t *testing.T) {
	tests := []struct{ name, stream string }{
		{"a line", "data: " + strings.Repeat("x", 200<<10) + "\n\n"},
		{"an event's data", strings.Repeat("data: "+strings.Repeat("x", 1<<10)+"\n", 200) + "\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readAllEvents(tc.stream, 100<<10)
			if err == nil || errors.Is(err, io.EOF) || len(got) != 0 {
				t.Fatalf("a stream of %d bytes with a bound of 100 KiB: %d events, %v; want an error", len(tc.stream), len(got), err)
			}
		})
	}
}

// FuzzSSEReader: any bytes are read without a panic and within the bound;
// and an event written as the server writes it (event:, data: lines, a
// blank line) reads back as it was.
func FuzzSSEReader(f *testing.F) {
	f.Add([]byte("event: job\ndata: {}\n\n"), "job", "{\"a\":1}\n{}")
	f.Add([]byte(": heartbeat\n\ndata\n\n"), "", "")
	f.Add([]byte("data: x\r\n\r\n"), " snapshot", "a\n\nb")
	f.Fuzz(func(t *testing.T, raw []byte, name, data string) {
		const max = 1 << 10
		r := newSSEReader(bytes.NewReader(raw), max)
		for {
			ev, err := r.next()
			if err != nil {
				break
			}
			if len(ev.data) > max || strings.Contains(ev.name, "\n") {
				t.Fatalf("event %q with %d bytes of data from a reader bound to %d", ev.name, len(ev.data), max)
			}
		}
		if strings.Contains(name, "\n") || len(name)+len(data) > max/2 {
			return
		}
		var b strings.Builder
		b.WriteString("event: " + name + "\n")
		for _, line := range strings.Split(data, "\n") {
			b.WriteString("data: " + line + "\n")
		}
		b.WriteString("\n")
		got, err := readAllEvents(b.String(), max)
		want := []sseEvent{{name: name, data: []byte(data)}}
		if !errors.Is(err, io.EOF) || !cmp.Equal(want, got, cmp.AllowUnexported(sseEvent{}), cmpopts.EquateEmpty()) {
			t.Fatalf("%q read back as %+v, %v; want %+v", b.String(), got, err, want)
		}
	})
}

func TestParseTCPTable(t *testing.T) {
	const table = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:A70F 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 5930952 2 000000000ff3a636 100 0 0 10 0
   1: 0100007F:A70F 0100007F:C5D2 01 00000010:00000000 00:00000000 00000000     0        0 5930953 1 0000000000000000 20 4 30 10 -1
   2: 0100007F:A70F 0100007F:C5D3 07 00345F01:00000000 00:00000000 00000000     0        0 0 1 0000000000000000 20 4 30 10 -1
   3: 0100007F:A70F 0100007F:C5D4 zz 00000000:00000000
`
	tests := []struct {
		name    string
		remote  string
		want    tcpSocket
		wantErr bool
	}{
		{name: "established", remote: "0100007F:C5D2", want: tcpSocket{found: true, state: tcpEstablished, txQueue: 16}},
		{name: "closed with data queued", remote: "0100007F:C5D3", want: tcpSocket{found: true, state: 7, txQueue: 0x345F01}},
		{name: "gone", remote: "0100007F:C5D5", want: tcpSocket{}},
		{name: "a bad state", remote: "0100007F:C5D4", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseTCPTable([]byte(table), "0100007F:A70F", tc.remote)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("parseTCPTable = %+v, %v; want %+v, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
	for in, want := range map[string]string{"127.0.0.1:42767": "0100007F:A70F", "[::1]:80": "", "localhost:80": ""} {
		got, err := procTCPAddr(in)
		if got != want || (err != nil) != (want == "") {
			t.Errorf("procTCPAddr(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// FuzzParseTCPTable: no table makes the parser panic.
func FuzzParseTCPTable(f *testing.F) {
	f.Add([]byte("   1: 0100007F:A70F 0100007F:C5D2 01 00000010:00000000 00:00000000\n"))
	f.Add([]byte("   1: 0100007F:A70F 0100007F:C5D2 01 :\n"))
	f.Fuzz(func(t *testing.T, table []byte) {
		_, _ = parseTCPTable(table, "0100007F:A70F", "0100007F:C5D2")
	})
}

// TestStalledStreamEnd: end tells a server that closes a stream it cannot
// write to from one that keeps it open, though the client reads neither.
func TestStalledStreamEnd(t *testing.T) {
	if _, err := os.Stat("/proc/net/tcp"); err != nil {
		t.Fatalf("the soak needs Linux's /proc/net/tcp: %v", err)
	}
	tests := []struct {
		name string
		// closeAfter is when the server gives up writing; 0: never.
		closeAfter time.Duration
		wantClosed bool
	}{
		{name: "closed by the server", closeAfter: time.Second, wantClosed: true},
		{name: "kept open", wantClosed: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			release := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				w.WriteHeader(http.StatusOK)
				rc := http.NewResponseController(w)
				if tc.closeAfter > 0 {
					_ = rc.SetWriteDeadline(time.Now().Add(tc.closeAfter))
				}
				chunk := []byte("data: " + strings.Repeat("x", 8<<10) + "\n\n")
				for {
					if _, err := w.Write(chunk); err != nil {
						return
					}
					select {
					case <-release:
						return
					default:
					}
				}
			}))
			defer srv.Close()
			defer close(release)
			st, err := openStalled(srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			res := st.end(3 * time.Second)
			if closed := res.closedAfter > 0; closed != tc.wantClosed || (closed && res.status != "HTTP/1.1 200 OK") {
				t.Errorf("end: closed after %v, status %q, %s; want closed %v, after a 200", res.closedAfter, res.status, res.err, tc.wantClosed)
			}
		})
	}
}
