package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"os"
	"runtime"
	"runtime/debug"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// A damaged file must fail Open with an error that says so, never crash
// the server: bbolt maps the file into memory and trusts what it reads,
// so a file truncated below the size its meta page records makes it read
// past the end of the file (a fault, which kills the process) or panic on
// a page of zeros. openBoltDB therefore
//
//  1. reads the two meta pages itself, before bbolt maps anything, and
//     refuses a file whose meta pages are not both valid or that is
//     shorter than the meta page says;
//  2. opens the file read-only with bbolt and checks its structure
//     (tx.Check) before anything writes to it, with any panic and any
//     memory fault on the mapping turned into an error.
//
// Step 1 refuses a file bbolt itself would open: when one meta page is
// invalid bbolt falls back on the other, which holds the transaction
// before the last one, and so silently loses the last write it
// acknowledged. bbolt writes each meta page with one write of a page
// whose meta fields sit in its first 64 bytes, within one disk sector, so
// a crash does not tear it in practice; an invalid meta page means the
// file was damaged, which the operator should know of.
//
// Step 2 is cheap enough to run at every open: measured on two shared
// cores with 2 KiB manifests, tx.Check alone takes about 2.5 ms per
// thousand jobs, and Open with both steps 10-20 ms with a thousand jobs
// and 40-60 ms with ten thousand (a bare bbolt open: under 1 ms), about a
// tenth of the ListJobs every scheduler runs when it starts.

// bbolt's meta page (go.etcd.io/bbolt/internal/common, file format
// version 2): each of the file's first two pages is a 16-byte page header
// followed by these fields, in the machine's byte order.
const (
	boltMagic      = 0xED0CDAED
	boltVersion    = 2
	boltPageHeader = 16
	// Offsets within the meta: magic u32, version u32, pageSize u32,
	// flags u32, root bucket (root u64, sequence u64), freelist u64,
	// pgid u64 (the high water mark: pages in use), txid u64, checksum
	// u64 (FNV-1a of everything before it).
	metaVersionAt  = 4
	metaPageSizeAt = 8
	metaPgidAt     = 40
	metaTxidAt     = 48
	metaChecksumAt = 56
	metaSize       = 64
)

// boltMeta is what checkBoltFile needs of a meta page.
type boltMeta struct {
	pageSize uint32
	pgid     uint64
	txid     uint64
}

// errShortMeta: the file ends inside a meta page.
var errShortMeta = errors.New("the file ends inside it")

// readBoltMeta reads and validates the meta page at off.
func readBoltMeta(f *os.File, off int64) (boltMeta, error) {
	var b [boltPageHeader + metaSize]byte
	if _, err := f.ReadAt(b[:], off); errors.Is(err, io.EOF) {
		return boltMeta{}, errShortMeta
	} else if err != nil {
		return boltMeta{}, err
	}
	m := b[boltPageHeader:]
	ne := binary.NativeEndian
	if magic := ne.Uint32(m); magic != boltMagic {
		return boltMeta{}, fmt.Errorf("bad magic number %#x", magic)
	}
	if v := ne.Uint32(m[metaVersionAt:]); v != boltVersion {
		return boltMeta{}, fmt.Errorf("format version %d, not %d", v, boltVersion)
	}
	h := fnv.New64a()
	_, _ = h.Write(m[:metaChecksumAt])
	if h.Sum64() != ne.Uint64(m[metaChecksumAt:]) {
		return boltMeta{}, errors.New("checksum mismatch")
	}
	return boltMeta{
		pageSize: ne.Uint32(m[metaPageSizeAt:]),
		pgid:     ne.Uint64(m[metaPgidAt:]),
		txid:     ne.Uint64(m[metaTxidAt:]),
	}, nil
}

// checkBoltFile is step 1 above. It returns a damage description, or an
// error reading the file; neither if the file is sound or absent.
func checkBoltFile(path string) (damage string, err error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil // bbolt creates it
	}
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	info, err := f.Stat()
	if err != nil {
		return "", err
	}
	size := info.Size()
	if size == 0 {
		// bbolt initialises an empty file: what a crash right after
		// creating it leaves.
		return "", nil
	}
	meta0, err0 := readBoltMeta(f, 0)
	if errors.Is(err0, errShortMeta) {
		return fmt.Sprintf("truncated: %d bytes, shorter than its first page", size), nil
	}
	// The second meta page is one page in; its size is in the first, or,
	// if that is invalid, found by trying each size bbolt allows (1 KiB to
	// 16 MiB) as bbolt does.
	var meta1 boltMeta
	var err1 error
	if err0 == nil {
		meta1, err1 = readBoltMeta(f, int64(meta0.pageSize))
		if errors.Is(err1, errShortMeta) {
			return fmt.Sprintf("truncated: %d bytes, shorter than its two meta pages (%d bytes each)", size, meta0.pageSize), nil
		}
	} else {
		err1 = errors.New("not found")
		for ps := int64(1024); ps <= 16<<20 && ps < size; ps *= 2 {
			if m, err := readBoltMeta(f, ps); err == nil && int64(m.pageSize) == ps {
				meta1, err1 = m, nil
				break
			}
		}
	}
	switch {
	case err0 != nil && err1 != nil:
		return fmt.Sprintf("no valid meta page (page 0: %v; page 1: %v): not a bbolt file, or its start was overwritten", err0, err1), nil
	case err0 != nil || err1 != nil:
		bad, badErr := 0, err0
		if err1 != nil {
			bad, badErr = 1, err1
		}
		return fmt.Sprintf("meta page %d is invalid (%v), so the last transaction written may be lost", bad, badErr), nil
	}
	last := meta0
	if meta1.txid > meta0.txid {
		last = meta1
	}
	if need := int64(last.pgid) * int64(last.pageSize); size < need {
		return fmt.Sprintf("truncated: %d bytes, but its pages need %d", size, need), nil
	}
	return "", nil
}

// openBoltDB opens path with bbolt after the checks above. A damaged file
// gives an error wrapping ErrDamaged; a locked one, bbolt's ErrTimeout.
func openBoltDB(path string) (*bolt.DB, error) {
	damage, err := checkBoltFile(path)
	if err != nil {
		return nil, err
	}
	if damage != "" {
		return nil, damagedError(path, damage)
	}
	if err := verifyBoltFile(path); err != nil {
		return nil, err
	}
	var db *bolt.DB
	err = guardBolt(func() error {
		var err error
		db, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: boltLockTimeout})
		return err
	})
	return db, boltOpenError(path, err)
}

// verifyBoltFile is step 2 above. It opens the file read-only: opened for
// writing, bbolt reads the freelist before Open returns, and a panic
// there would leave the file mapped and locked with no DB to close;
// opened read-only, bbolt reads it only in tx.Check, which reports a
// panic as an error. An absent or empty file is new: nothing to check.
func verifyBoltFile(path string) error {
	if info, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) || err == nil && info.Size() == 0 {
		return nil
	}
	var db *bolt.DB
	err := guardBolt(func() error {
		var err error
		db, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: boltLockTimeout, ReadOnly: true})
		return err
	})
	if err != nil {
		return boltOpenError(path, err)
	}
	err = guardBolt(func() error { return checkBoltDB(db, path) })
	if closeErr := guardBolt(db.Close); err == nil && closeErr != nil {
		err = fmt.Errorf("close after checking: %w", closeErr)
	}
	return boltOpenError(path, err)
}

// boltOpenError turns what says the file is damaged into an error wrapping
// ErrDamaged, and passes other errors through.
func boltOpenError(path string, err error) error {
	var pe panicError
	var de damageError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &de):
		return damagedError(path, string(de))
	case errors.As(err, &pe):
		return damagedError(path, "bbolt failed reading it: "+pe.Error())
	case errors.Is(err, bolterrors.ErrInvalid), errors.Is(err, bolterrors.ErrChecksum),
		errors.Is(err, bolterrors.ErrVersionMismatch):
		return damagedError(path, err.Error())
	}
	return err
}

// checkBoltDB is step 2 above, in one read-only transaction. It reads
// every key and value in the calling goroutine, where guardBolt turns a
// fault into an error, before tx.Check walks the same pages in a
// goroutine of its own (where a fault could not be recovered).
func checkBoltDB(db *bolt.DB, path string) error {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	return db.View(func(tx *bolt.Tx) error {
		if need := tx.Size(); info.Size() < need {
			return damageError(fmt.Sprintf("truncated: %d bytes, but its pages need %d", info.Size(), need))
		}
		var sum byte
		err := tx.ForEach(func(_ []byte, b *bolt.Bucket) error {
			return b.ForEach(func(k, v []byte) error {
				if len(v) > 0 {
					sum ^= v[0] ^ v[len(v)-1]
				}
				return nil
			})
		})
		if err != nil {
			return err
		}
		runtime.KeepAlive(sum) // so the reads are made
		var problems []error
		for err := range tx.Check() {
			problems = append(problems, err) // drain: Check stops only then
		}
		switch len(problems) {
		case 0:
			return nil
		case 1:
			return damageError("inconsistent: " + problems[0].Error())
		}
		return damageError(fmt.Sprintf("inconsistent: %v (and %d more problems)", problems[0], len(problems)-1))
	})
}

// damageError is a damage checkBoltDB found.
type damageError string

func (e damageError) Error() string { return string(e) }

// panicError is a panic guardBolt recovered.
type panicError struct{ v any }

func (e panicError) Error() string { return fmt.Sprint(e.v) }

// guardBolt runs fn with memory faults turned into panics, and returns a
// panic as a panicError. SetPanicOnFault applies to this goroutine only,
// and is restored when fn returns.
func guardBolt(fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if v := recover(); v != nil {
			err = panicError{v}
		}
	}()
	return fn()
}

// damagedError says path is damaged, how, and what the operator can do.
func damagedError(path, damage string) error {
	return fmt.Errorf("store: open %s: the file is %w (%s): restore it from a backup, or move it away to start with an empty store",
		path, ErrDamaged, damage)
}
