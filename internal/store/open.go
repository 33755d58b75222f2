package store

import (
	"context"
	"fmt"
	"strings"
)

// Open returns the store uri names. An empty uri selects the embedded
// store in dataDir (created if missing; the file is dataDir/voda.db); a
// "mongodb://" or "mongodb+srv://" uri selects MongoDB, with the database
// named by the uri's path ("voda" when it has none) and dataDir unused.
func Open(ctx context.Context, uri, dataDir string) (Store, error) {
	switch {
	case uri == "":
		if dataDir == "" {
			return nil, fmt.Errorf("store: open: no data directory for the embedded store")
		}
		return openBolt(ctx, dataDir)
	case strings.HasPrefix(uri, "mongodb://"), strings.HasPrefix(uri, "mongodb+srv://"):
		return openMongo(ctx, uri)
	}
	scheme, _, ok := strings.Cut(uri, "://")
	if !ok {
		scheme = "none"
	}
	return nil, fmt.Errorf("store: open: unsupported uri scheme %q (want mongodb:// or mongodb+srv://, or no uri for the embedded store)", scheme)
}
