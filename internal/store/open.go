package store

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
)

// Option changes how Open opens a store.
type Option func(*openOptions)

type openOptions struct {
	log *slog.Logger
}

// WithLogger makes Open log to l what it does to bring existing storage
// up to date (the indexes it builds or drops), instead of to
// slog.Default().
func WithLogger(l *slog.Logger) Option {
	return func(o *openOptions) { o.log = l }
}

// Open returns the store uri names. An empty uri selects the embedded
// store in dataDir (created if missing; the file is dataDir/voda.db); a
// "mongodb://" or "mongodb+srv://" uri selects MongoDB, with the database
// named by the uri's path ("voda" when it has none) and dataDir unused.
//
// Open builds the indexes the store needs that the storage lacks, as
// storage written by an earlier version does: the embedded store indexes
// its jobs once (in transactions of a few thousand jobs, recording when it
// is done, so an interrupted build starts again at the next Open), and
// again whenever its index does not account for every job; MongoDB creates
// missing indexes and drops one it no longer uses.
func Open(ctx context.Context, uri, dataDir string, opts ...Option) (Store, error) {
	o := openOptions{log: slog.Default()}
	for _, opt := range opts {
		opt(&o)
	}
	switch {
	case uri == "":
		if dataDir == "" {
			return nil, fmt.Errorf("store: open: no data directory for the embedded store")
		}
		return openBolt(ctx, dataDir, o.log)
	case strings.HasPrefix(uri, "mongodb://"), strings.HasPrefix(uri, "mongodb+srv://"):
		return openMongo(ctx, uri, o.log)
	}
	scheme, _, ok := strings.Cut(uri, "://")
	if !ok {
		scheme = "none"
	}
	return nil, fmt.Errorf("store: open: unsupported uri scheme %q (want mongodb:// or mongodb+srv://, or no uri for the embedded store)", scheme)
}
