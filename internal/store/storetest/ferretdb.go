package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/FerretDB/FerretDB/ferretdb"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// ferret is the one embedded FerretDB server of a test binary, started on
// first use and kept until the binary exits.
var ferret struct {
	once sync.Once
	uri  string
	dir  string
	err  error
}

// FerretDB returns a MongoDB URI naming a fresh, empty database on a
// FerretDB server embedded in the test binary, for tests of code that
// needs MongoDB. The server (SQLite backend, 127.0.0.1, a free port)
// starts on the first call and serves the whole binary; the database is
// dropped when t ends. FerretDB logs only with -test.v, and then only
// warnings.
//
// The server's files live in a directory under os.TempDir(); call Main
// from TestMain to remove it when the tests end.
func FerretDB(t testing.TB) string {
	t.Helper()
	ferret.once.Do(func() { ferret.uri, ferret.dir, ferret.err = startFerretDB(testing.Verbose()) })
	if ferret.err != nil {
		t.Fatalf("start embedded FerretDB: %v", ferret.err)
	}
	return MongoDatabase(t, ferret.uri)
}

// Main runs m's tests, removes the embedded FerretDB's files if FerretDB
// started it, and exits. Use it as a package's TestMain:
//
//	func TestMain(m *testing.M) { storetest.Main(m) }
func Main(m *testing.M) {
	code := m.Run()
	if err := Cleanup(); err != nil && code == 0 {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

// Cleanup removes the embedded FerretDB's files, if it was started; for a
// TestMain that cannot use Main.
func Cleanup() error {
	if ferret.dir == "" {
		return nil
	}
	if err := os.RemoveAll(ferret.dir); err != nil {
		return fmt.Errorf("storetest: remove FerretDB files: %w", err)
	}
	return nil
}

// startFerretDB starts a server that runs until the binary exits, with its
// files in a new temporary directory. (SQLite's in-memory mode would leave
// nothing behind, but FerretDB gives it a single connection and its
// updates then deadlock under concurrent writers.)
func startFerretDB(verbose bool) (uri, dir string, err error) {
	logger := slog.New(slog.DiscardHandler)
	if verbose {
		h := slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})
		logger = slog.New(quietHandler{h}).With("component", "ferretdb")
	}
	dir, err = os.MkdirTemp("", "voda-ferretdb-")
	if err != nil {
		return "", "", err
	}
	f, err := ferretdb.New(&ferretdb.Config{
		Listener: ferretdb.ListenerConfig{TCP: "127.0.0.1:0"},
		Logger:   logger,
		Handler:  "sqlite",
		// The URL names a directory; FerretDB keeps one file per database.
		// Its transactions take SQLite's write lock when they begin
		// (_txlock=immediate) and wait up to a minute for it: a deferred
		// transaction that read before another writer committed fails at
		// once with "database is locked" (SQLITE_BUSY), whatever the busy
		// timeout, and FerretDB's default 10 s was too short for 1,000
		// concurrent creates on a machine busy with other tests
		// (TestMongoFerretDB/ConcurrentCreates lost 6 of them).
		SQLiteURL: (&url.URL{Scheme: "file", Path: dir + "/", RawQuery: "_txlock=immediate&_pragma=busy_timeout(60000)"}).String(),
	})
	if err != nil {
		_ = os.RemoveAll(dir)
		return "", "", err
	}
	go func() { _ = f.Run(context.Background()) }()
	// MongoDBURI waits for Run to start listening.
	return f.MongoDBURI(), dir, nil
}

// MongoDatabase returns baseURI (a MongoDB URI) with its database replaced
// by a fresh one named after t, and drops that database when t ends, so
// tests sharing a server never see each other's data. Use it to run tests
// against a real MongoDB server.
func MongoDatabase(t testing.TB, baseURI string) string {
	t.Helper()
	name, err := databaseName(t.Name())
	if err != nil {
		t.Fatalf("database name: %v", err)
	}
	uri, err := withDatabase(baseURI, name)
	if err != nil {
		t.Fatalf("MongoDB URI: %v", err)
	}
	t.Cleanup(func() {
		if err := dropDatabase(uri, name); err != nil {
			t.Errorf("drop test database %s: %v", name, err)
		}
	})
	return uri
}

// databaseName makes a name valid on MongoDB and FerretDB (at most 63 of
// [A-Za-z0-9_-]) from a test name plus a random suffix.
func databaseName(testName string) (string, error) {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	clean := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-':
			return r
		}
		return '_'
	}, testName)
	const prefix, maxLen = "vodatest_", 63
	if keep := maxLen - len(prefix) - 1 - 2*len(b); len(clean) > keep {
		clean = clean[len(clean)-keep:] // the end names the subtest
	}
	return prefix + clean + "_" + hex.EncodeToString(b[:]), nil
}

// withDatabase replaces the database in a MongoDB URI. The driver
// authenticates against the URI's database unless authSource says
// otherwise, so when the URI has credentials authSource keeps the
// original (or "admin", the default).
func withDatabase(uri, db string) (string, error) {
	scheme, rest, ok := strings.Cut(uri, "://")
	if !ok {
		return "", fmt.Errorf("no scheme in MongoDB URI")
	}
	rest, rawQuery, _ := strings.Cut(rest, "?")
	hosts, oldDB, _ := strings.Cut(rest, "/")
	query, err := url.ParseQuery(rawQuery)
	if err != nil {
		return "", fmt.Errorf("parse MongoDB URI options: %w", err)
	}
	if strings.Contains(hosts, "@") && !hasKeyFold(query, "authSource") {
		if oldDB == "" {
			oldDB = "admin"
		}
		query.Set("authSource", oldDB)
	}
	out := scheme + "://" + hosts + "/" + db
	if len(query) > 0 {
		out += "?" + query.Encode()
	}
	return out, nil
}

// hasKeyFold reports whether q has key, ignoring case as MongoDB does.
func hasKeyFold(q url.Values, key string) bool {
	for k := range q {
		if strings.EqualFold(k, key) {
			return true
		}
	}
	return false
}

func dropDatabase(uri, name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := mongo.Connect(options.Client().ApplyURI(uri))
	if err != nil {
		return err
	}
	defer func() { _ = client.Disconnect(ctx) }()
	return client.Database(name).Drop(ctx)
}

// quietHandler drops FerretDB's warnings that carry no news: it logs every
// error response at warning level, including the driver's endSessions
// on disconnect, which FerretDB does not implement.
type quietHandler struct{ slog.Handler }

func (h quietHandler) Handle(ctx context.Context, r slog.Record) error {
	if strings.HasPrefix(r.Message, "Response ") {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h quietHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return quietHandler{h.Handler.WithAttrs(attrs)}
}

func (h quietHandler) WithGroup(name string) slog.Handler {
	return quietHandler{h.Handler.WithGroup(name)}
}
