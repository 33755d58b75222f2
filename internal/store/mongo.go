package store

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"math"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/connstring"

	"github.com/vodascheduler/voda/internal/model"
)

// defaultMongoDatabase is used when the uri names no database.
const defaultMongoDatabase = "voda"

// mongoStore is the MongoDB Store. It uses single-document writes only
// (no transactions, no change streams) so it also runs on FerretDB: each
// method touches only the fields it owns with $set, which is what keeps
// the API's and the scheduler's writes from overwriting each other (on
// FerretDB, with help from docLocks).
//
// Documents are jobRecord and schedulerRecord: jobs keyed by name,
// schedulers by GPU type; and historyDocument, keyed by historyKey.
type mongoStore struct {
	gate       gate
	locks      docLocks
	client     *mongo.Client
	jobs       *mongo.Collection
	schedulers *mongo.Collection
	histories  *mongo.Collection
	// beforeBulk, if set (by tests only), is called by SaveStatus between
	// its read and its bulk write, to write in between as another process
	// could.
	beforeBulk func()
}

var _ Store = (*mongoStore)(nil)

// openMongo connects, checks the server answers, and creates the indexes
// it lacks, logging to log what it changes.
func openMongo(ctx context.Context, uri string, log *slog.Logger) (*mongoStore, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("store: open mongodb: %w", err)
	}
	// The driver's errors quote neither the uri nor its password; ours
	// name the server by mongoWhere.
	cs, err := connstring.ParseAndValidate(uri)
	if err != nil {
		return nil, fmt.Errorf("store: open mongodb: parse uri: %w", err)
	}
	dbName := cs.Database
	if dbName == "" {
		dbName = defaultMongoDatabase
	}
	client, err := mongo.Connect(options.Client().ApplyURI(uri))
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", mongoWhere(cs), err)
	}
	db := client.Database(dbName)
	s := &mongoStore{
		client: client, jobs: db.Collection("jobs"), schedulers: db.Collection("schedulers"),
		histories: db.Collection("histories"),
	}
	s.locks.seed = maphash.MakeSeed()
	if err := s.init(ctx, log); err != nil {
		_ = client.Disconnect(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("store: open %s database %s: %w", mongoWhere(cs), dbName, err)
	}
	return s, nil
}

// mongoWhere names a uri's server for errors and logs: its scheme, user
// and hosts, without the password and the options (which may hold
// secrets too, e.g. tlsCertificateKeyFilePassword).
func mongoWhere(cs *connstring.ConnString) string {
	user := ""
	if cs.Username != "" {
		user = url.PathEscape(cs.Username) + "@"
	}
	return cs.Scheme + "://" + user + strings.Join(cs.Hosts, ",")
}

// Indexes of the jobs collection. Queries name none of them (a hint to an
// index an operator dropped would fail them); MongoDB's planner picks
// them, as TestMongoExplain checks against a real server.
var jobIndexes = []mongoIndex{
	// ListJobs' order, and its pages: a range from a position, sorted,
	// read until the page is full.
	{"submitOrder", bson.D{{Key: "spec.submitTime", Value: 1}, {Key: "_id", Value: 1}}},
	// Live jobs, in ListJobs' order: a scheduler's resync and recovery,
	// the API's event stream. Live selects the point ranges true and null
	// (an absent flag), each sorted by the fields after it, so the scan
	// reads the live jobs only, already in order.
	{"liveOrder", bson.D{{Key: "live", Value: 1}, {Key: "spec.submitTime", Value: 1}, {Key: "_id", Value: 1}}},
	// Terminal jobs, oldest first: ListFinished; also CountJobs.
	{"finishOrder", bson.D{{Key: "live", Value: 1}, {Key: "status.finishTime", Value: 1}, {Key: "_id", Value: 1}}},
}

// mongoIndex is an index by name.
type mongoIndex struct {
	name string
	keys bson.D
}

// droppedJobIndexes are indexes earlier versions created that no query
// uses any more, so that they no longer cost every write.
var droppedJobIndexes = []string{
	// {spec.gpuType, live}: served a scheduler's live jobs by reading
	// every job of its GPU type, finished ones included.
	"gpuTypeLive",
}

// init pings first so an unreachable server fails Open rather than the
// first request, then creates the indexes the queries rely on that the
// database lacks (as one an earlier version wrote does), and drops those
// no query uses any more; it logs each change.
func (s *mongoStore) init(ctx context.Context, log *slog.Logger) error {
	if err := s.client.Ping(ctx, nil); err != nil {
		return fmt.Errorf("ping: %w", err)
	}
	if err := syncIndexes(ctx, s.jobs, jobIndexes, droppedJobIndexes, log); err != nil {
		return err
	}
	// ListHistories' query: a GPU type's histories.
	byType := mongoIndex{"gpuType", bson.D{{Key: "gpuType", Value: 1}}}
	return syncIndexes(ctx, s.histories, []mongoIndex{byType}, nil, log)
}

// mongoIndexNotFound is the server's error code for dropping an index that
// does not exist.
const mongoIndexNotFound = 27

// syncIndexes creates the indexes of want that coll lacks, by name, and
// drops those of drop it has. Another process opening the same database
// may do the same at the same time: creating an index that exists is a
// no-op, and dropping one already dropped is not an error.
func syncIndexes(ctx context.Context, coll *mongo.Collection, want []mongoIndex, drop []string, log *slog.Logger) error {
	have, err := coll.Indexes().ListSpecifications(ctx)
	if err != nil {
		return fmt.Errorf("list indexes of %s: %w", coll.Name(), err)
	}
	exists := make(map[string]bool, len(have))
	for _, spec := range have {
		exists[spec.Name] = true
	}
	// Indexes of a new, empty collection are not news.
	level := slog.LevelDebug
	if n, err := coll.EstimatedDocumentCount(ctx); err != nil || n > 0 {
		level = slog.LevelInfo
	}
	// One at a time, and only the missing ones: FerretDB v1.24 panics
	// (and drops the connection) when one createIndexes call names two
	// indexes that already exist.
	for _, idx := range want {
		if exists[idx.name] {
			continue
		}
		start := time.Now()
		model := mongo.IndexModel{Keys: idx.keys, Options: options.Index().SetName(idx.name)}
		if _, err := coll.Indexes().CreateOne(ctx, model); err != nil {
			return fmt.Errorf("create index %s of %s: %w", idx.name, coll.Name(), err)
		}
		log.Log(ctx, level, "store: created an index", "collection", coll.Name(), "index", idx.name,
			"took", time.Since(start).Round(time.Millisecond))
	}
	for _, name := range drop {
		if !exists[name] {
			continue
		}
		err := coll.Indexes().DropOne(ctx, name)
		var ce mongo.CommandError
		if errors.As(err, &ce) && ce.Code == mongoIndexNotFound {
			continue
		}
		if err != nil {
			return fmt.Errorf("drop index %s of %s: %w", name, coll.Name(), err)
		}
		log.Info("store: dropped an index no query uses", "collection", coll.Name(), "index", name)
	}
	return nil
}

func (s *mongoStore) CreateJob(ctx context.Context, j Job) error {
	if err := s.gate.enter(ctx); err != nil {
		return fmt.Errorf("store: create job %s: %w", j.Name, err)
	}
	defer s.gate.leave()
	if j.Name == "" {
		return errors.New("store: create job: empty name")
	}
	rec, err := encodeJob(j)
	if err != nil {
		return fmt.Errorf("store: create job %s: %w", j.Name, err)
	}
	_, err = s.jobs.InsertOne(ctx, rec)
	if mongo.IsDuplicateKeyError(err) {
		return fmt.Errorf("store: create job %s: %w", j.Name, ErrExists)
	}
	if err != nil {
		return fmt.Errorf("store: create job %s: %w", j.Name, err)
	}
	return nil
}

func (s *mongoStore) GetJob(ctx context.Context, name string) (Job, error) {
	if err := s.gate.enter(ctx); err != nil {
		return Job{}, fmt.Errorf("store: get job %s: %w", name, err)
	}
	defer s.gate.leave()
	raw, err := s.jobs.FindOne(ctx, byID(name)).Raw()
	if errors.Is(err, mongo.ErrNoDocuments) {
		return Job{}, fmt.Errorf("store: get job %s: %w", name, ErrNotFound)
	}
	if err != nil {
		return Job{}, fmt.Errorf("store: get job %s: %w", name, err)
	}
	return readMongoJob(raw), nil
}

// ListJobs decodes the documents one at a time, so that one that does not
// decode is returned as unreadable rather than failing the whole list.
//
// The filter selects a superset, which matches then narrows, because of
// unreadable documents: one whose GPU type cannot be read (absent, or not
// a string) lists under every type, and one whose live flag is absent is
// judged by its status. A page is therefore not stopped by a server-side
// limit but read in batches of its size until it is full.
func (s *mongoStore) ListJobs(ctx context.Context, opts ListOptions) ([]Job, error) {
	if err := s.gate.enter(ctx); err != nil {
		return nil, fmt.Errorf("store: list jobs: %w", err)
	}
	defer s.gate.leave()
	if err := opts.check(); err != nil {
		return nil, fmt.Errorf("store: list jobs: %w", err)
	}
	filter, none := listFilter(opts)
	if none {
		return nil, nil
	}
	find := options.Find().SetSort(listSort)
	if opts.Limit > 0 {
		find.SetBatchSize(int32(min(opts.Limit, math.MaxInt32)))
	}
	cur, err := s.jobs.Find(ctx, filter, find)
	if err != nil {
		return nil, fmt.Errorf("store: list jobs: %w", err)
	}
	defer func() { _ = cur.Close(context.WithoutCancel(ctx)) }()
	var jobs []Job
	var unreadable bool
	for (opts.Limit == 0 || len(jobs) < opts.Limit) && cur.Next(ctx) {
		j := readMongoJob(cur.Current)
		unreadable = unreadable || j.Unreadable != ""
		if opts.matches(j) {
			jobs = append(jobs, j)
		}
	}
	if err := cur.Err(); err != nil {
		return nil, fmt.Errorf("store: list jobs: %w", err)
	}
	if unreadable && !opts.paged() {
		// The server sorted a submit time that is not a number after
		// every number, but the job is returned with the zero time. A
		// page holds none (see pageFilter), so its order is the server's.
		slices.SortFunc(jobs, jobBefore)
	}
	return jobs, nil
}

// listSort is ListJobs' order. Times are int64 nanoseconds and the zero
// time is null, which MongoDB sorts before every number: the same order
// as time.Time.Compare.
var listSort = bson.D{{Key: "spec.submitTime", Value: 1}, {Key: "_id", Value: 1}}

// listFilter is ListJobs' filter for opts; none reports that no job can
// match (a position past every time).
func listFilter(opts ListOptions) (filter bson.D, none bool) {
	submit, name, none := opts.After.stored()
	if none {
		return nil, true
	}
	var conds bson.A
	if opts.GPUType != "" {
		conds = append(conds, bson.D{{Key: "$or", Value: bson.A{
			bson.D{{Key: "spec.gpuType", Value: opts.GPUType}},
			bson.D{{Key: "spec.gpuType", Value: bson.D{{Key: "$not", Value: bson.D{{Key: "$type", Value: "string"}}}}}},
		}}})
	}
	if opts.Live {
		conds = append(conds, liveFilter(true))
	}
	if opts.paged() {
		conds = append(conds, pageFilter(submit, name))
	}
	switch len(conds) {
	case 0:
		return bson.D{}, false
	case 1:
		return conds[0].(bson.D), false
	}
	return bson.D{{Key: "$and", Value: conds}}, false
}

// liveFilter selects live jobs (live true) or terminal ones: by the live
// flag the store writes with every status, absent (null) in no document
// the store wrote, so judged by the status (see ListJobs). An index whose
// prefix is live serves both as point ranges.
func liveFilter(live bool) bson.D {
	if !live {
		return bson.D{{Key: "live", Value: false}}
	}
	return bson.D{{Key: "live", Value: bson.D{{Key: "$in", Value: bson.A{true, nil}}}}}
}

// pageFilter selects the jobs after the position (submit, name) in
// ListJobs' order, as stored: a zero-time position is followed by the
// zero-time (null) jobs with a later name, then every time; any other by
// the later times, then that time's later names. It selects only submit
// times stored as the store writes them (64-bit integers, null): MongoDB
// sorts other types apart from every number, so no position could page
// past them (see Store.ListJobs). Each clause is a range of the
// submitOrder index.
func pageFilter(submit *int64, name string) bson.D {
	const st = "spec.submitTime"
	long := bson.E{Key: "$type", Value: "long"}
	if submit == nil {
		zero := bson.D{{Key: st, Value: nil}}
		if name != "" {
			zero = append(zero, bson.E{Key: "_id", Value: bson.D{{Key: "$gt", Value: name}}})
		}
		return bson.D{{Key: "$or", Value: bson.A{zero, bson.D{{Key: st, Value: bson.D{long}}}}}}
	}
	return bson.D{{Key: "$or", Value: bson.A{
		bson.D{{Key: st, Value: bson.D{{Key: "$gt", Value: *submit}, long}}},
		bson.D{{Key: st, Value: bson.D{{Key: "$eq", Value: *submit}, long}}, {Key: "_id", Value: bson.D{{Key: "$gt", Value: name}}}},
	}}}
}

// readMongoJob returns the job in doc, or, when doc does not decode, what
// can still be read of it (see Job.Unreadable).
func readMongoJob(doc bson.Raw) Job {
	var rec jobRecord
	if err := bson.Unmarshal(doc, &rec); err != nil {
		return partialMongoJob(doc, err).job()
	}
	return decodeJob(rec)
}

// partialMongoJob reads what it can of an undecodable document, each field
// on its own so that one damaged part does not hide the others.
func partialMongoJob(doc bson.Raw, err error) partialJob {
	p := partialJob{Why: "decode record: " + err.Error()}
	if v, err := doc.LookupErr("_id"); err == nil {
		var ok bool
		if p.Name, ok = v.StringValueOK(); !ok {
			// Not a name any store wrote; shown for an operator, though
			// no method can address it.
			p.Name = v.String()
		}
	}
	if v, err := doc.LookupErr("spec", "gpuType"); err == nil {
		p.GPUType, _ = v.StringValueOK()
	}
	// Only what the store writes (see pageFilter); null and any other
	// type read as the zero time.
	if v, err := doc.LookupErr("spec", "submitTime"); err == nil {
		if n, ok := v.Int64OK(); ok {
			p.SubmitTime = &n
		}
	}
	if v, err := doc.LookupErr("status", "finishTime"); err == nil {
		if n, ok := v.Int64OK(); ok {
			p.FinishTime = &n
		}
	}
	if v, err := doc.LookupErr("status", "state", "status"); err == nil {
		s, _ := v.StringValueOK()
		p.Status = model.Status(s)
	}
	if v, err := doc.LookupErr("statusRev"); err == nil {
		p.StatusRevision, _ = v.AsInt64OK()
	}
	if v, err := doc.LookupErr("progressRev"); err == nil {
		p.ProgressRevision, _ = v.AsInt64OK()
	}
	return p
}

func (s *mongoStore) SetPriority(ctx context.Context, name string, priority int) error {
	err := s.updateJob(ctx, name, bson.D{{Key: "spec.priority", Value: priority}})
	if err != nil {
		return fmt.Errorf("store: set priority of job %s: %w", name, err)
	}
	return nil
}

func (s *mongoStore) RequestDelete(ctx context.Context, name string) error {
	err := s.updateJob(ctx, name, bson.D{{Key: "deleteRequested", Value: true}})
	if err != nil {
		return fmt.Errorf("store: request delete of job %s: %w", name, err)
	}
	return nil
}

// updateJob $sets fields of one existing job; never upserts.
func (s *mongoStore) updateJob(ctx context.Context, name string, set bson.D) error {
	if err := s.gate.enter(ctx); err != nil {
		return err
	}
	defer s.gate.leave()
	defer s.locks.lock("jobs/" + name)()
	res, err := s.jobs.UpdateOne(ctx, byID(name), bson.D{{Key: "$set", Value: set}})
	if err != nil {
		return err
	}
	if res.MatchedCount == 0 {
		return ErrNotFound
	}
	return nil
}

// SaveStatus makes its writes conditional in two steps.
//
// First it reads the jobs' documents, which settles the writes it can
// refuse at once: missing jobs, unreadable documents (a filter cannot
// test that a document decodes), terminal statuses and stale revisions.
//
// Then it sends one unordered bulk (in batches) of the remaining writes,
// each an UpdateOne whose filter repeats the revision and liveness test,
// so that on MongoDB a write from another process between the two steps
// makes the update match nothing rather than be overwritten. (FerretDB v1
// does not apply such an update atomically; docLocks keep this process's
// writers apart, as for every update.) Each update also stores a token
// drawn for this call: a bulk result only counts matches, so when some
// did not match, reading back each job's revision and token tells which
// writes this call made.
func (s *mongoStore) SaveStatus(ctx context.Context, writes map[string]StatusWrite) (SaveResult, error) {
	if err := s.gate.enter(ctx); err != nil {
		return SaveResult{}, fmt.Errorf("store: save status: %w", err)
	}
	defer s.gate.leave()
	names, recs, err := encodeStatuses(writes)
	if err != nil {
		return SaveResult{}, fmt.Errorf("store: save status: %w", err)
	}
	if len(names) == 0 {
		return SaveResult{}, nil
	}
	keys := make([]string, len(names))
	for i, name := range names {
		keys[i] = "jobs/" + name
	}
	defer s.locks.lock(keys...)()

	stored, err := s.findJobs(ctx, names, nil)
	if err != nil {
		return SaveResult{}, fmt.Errorf("store: save status: %w", err)
	}
	var res SaveResult
	var send []string
	for _, name := range names {
		doc, ok := stored[name]
		if !ok {
			res.Missing = append(res.Missing, name)
			continue
		}
		var rec jobRecord
		if err := bson.Unmarshal(doc, &rec); err != nil || !rec.writable(writes[name].Revision) {
			res.Conflicts = append(res.Conflicts, name)
			continue
		}
		send = append(send, name)
	}
	if len(send) == 0 {
		return res, nil
	}

	if s.beforeBulk != nil {
		s.beforeBulk()
	}
	token := rand.Text()
	models := make([]mongo.WriteModel, len(send))
	for i, name := range send {
		rev := writes[name].Revision
		set := bson.D{
			{Key: "status", Value: recs[name]},
			{Key: "live", Value: recs[name].live()},
			{Key: "statusRev", Value: rev + 1},
			{Key: statusWriterField, Value: token},
		}
		models[i] = mongo.NewUpdateOneModel().SetFilter(writableFilter(name, rev)).SetUpdate(bson.D{{Key: "$set", Value: set}})
	}
	var matched int64
	for start := 0; start < len(models); start += saveBatch {
		end := min(start+saveBatch, len(models))
		br, err := s.jobs.BulkWrite(ctx, models[start:end], options.BulkWrite().SetOrdered(false))
		if err != nil {
			return SaveResult{}, fmt.Errorf("store: save status: %w", err)
		}
		matched += br.MatchedCount
	}
	if matched < int64(len(send)) {
		if err := s.attribute(ctx, send, writes, token, &res); err != nil {
			return SaveResult{}, fmt.Errorf("store: save status: %w", err)
		}
	}
	return res, nil
}

// statusWriterField holds the token of the SaveStatus call (or SetAside)
// that last wrote a job's status; see SaveStatus.
const statusWriterField = "statusWriter"

// saveBatch bounds the updates of one bulk write. FerretDB v1.24 stops
// answering a bulk write of about 100 updates or more (50 take 0.2 s, 100
// never return), so SaveStatus sends a cycle's statuses in batches.
const saveBatch = 32

// writableFilter matches job name if a status write over revision may
// replace its status: the revision is the stored one and the status is
// not terminal. A document stored before revisions existed has no
// statusRev, which counts as revision 0 (null matches an absent field).
func writableFilter(name string, revision int64) bson.D {
	return bson.D{{Key: "_id", Value: name}, {Key: "statusRev", Value: revisionFilter(revision)}, {Key: "live", Value: true}}
}

// revisionFilter matches a stored revision field holding revision; for 0
// also an absent field (or null), as in a document stored before the
// field existed.
func revisionFilter(revision int64) any {
	if revision == 0 {
		return bson.D{{Key: "$in", Value: bson.A{int64(0), nil}}}
	}
	return revision
}

// attribute finds out which of the sent writes were not made, reading back
// each job's revision and writer token: a write was made by this call if
// the job has the revision it set and this call's token. (A write made
// and then replaced by another writer before the read-back, which needs
// another process, is reported as a conflict: the caller's copy is stale
// either way.) Names found absent are missing: deleted since the first
// read.
func (s *mongoStore) attribute(ctx context.Context, sent []string, writes map[string]StatusWrite, token string, res *SaveResult) error {
	projection := bson.D{{Key: "_id", Value: 1}, {Key: "statusRev", Value: 1}, {Key: statusWriterField, Value: 1}}
	stored, err := s.findJobs(ctx, sent, projection)
	if err != nil {
		return err
	}
	for _, name := range sent {
		doc, ok := stored[name]
		if !ok {
			res.Missing = append(res.Missing, name)
			continue
		}
		rev, _ := doc.Lookup("statusRev").AsInt64OK()
		writer, _ := doc.Lookup(statusWriterField).StringValueOK()
		if rev != writes[name].Revision+1 || writer != token {
			res.Conflicts = append(res.Conflicts, name)
		}
	}
	slices.Sort(res.Missing)
	slices.Sort(res.Conflicts)
	return nil
}

// findJobs returns the documents of the named jobs that exist, by name,
// with only the projection's fields if it is not nil.
func (s *mongoStore) findJobs(ctx context.Context, names []string, projection bson.D) (map[string]bson.Raw, error) {
	opts := options.Find()
	if projection != nil {
		opts.SetProjection(projection)
	}
	cur, err := s.jobs.Find(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: names}}}}, opts)
	if err != nil {
		return nil, fmt.Errorf("find jobs: %w", err)
	}
	defer func() { _ = cur.Close(context.WithoutCancel(ctx)) }()
	docs := make(map[string]bson.Raw, len(names))
	for cur.Next(ctx) {
		if name, ok := cur.Current.Lookup("_id").StringValueOK(); ok {
			// A copy: Current is valid only until Next.
			docs[name] = slices.Clone(cur.Current)
		}
	}
	if err := cur.Err(); err != nil {
		return nil, fmt.Errorf("find jobs: %w", err)
	}
	return docs, nil
}

// SetAside reads the document and rewrites it under the document's lock.
// A readable job's status is replaced by a conditional update like
// SaveStatus's, so that a write from another process in between is not
// overwritten: SetAside then reads again. An unreadable document is
// replaced whole.
func (s *mongoStore) SetAside(ctx context.Context, name, reason string, now time.Time) error {
	if err := s.gate.enter(ctx); err != nil {
		return fmt.Errorf("store: set aside job %s: %w", name, err)
	}
	defer s.gate.leave()
	var e encoder
	at := e.time("now", now)
	if e.err != nil {
		return fmt.Errorf("store: set aside job %s: %w", name, e.err)
	}
	defer s.locks.lock("jobs/" + name)()
	for range setAsideAttempts {
		done, err := s.setAsideOnce(ctx, name, reason, at)
		if err != nil {
			return fmt.Errorf("store: set aside job %s: %w", name, err)
		}
		if done {
			return nil
		}
	}
	return fmt.Errorf("store: set aside job %s: its status kept changing (%d attempts)", name, setAsideAttempts)
}

// setAsideAttempts bounds SetAside's rereads when other processes keep
// writing the job's status.
const setAsideAttempts = 5

// setAsideOnce makes one attempt; it reports false if another writer
// changed the document first.
func (s *mongoStore) setAsideOnce(ctx context.Context, name, reason string, at *int64) (bool, error) {
	doc, err := s.jobs.FindOne(ctx, byID(name)).Raw()
	if errors.Is(err, mongo.ErrNoDocuments) {
		return false, ErrNotFound
	}
	if err != nil {
		return false, err
	}
	var rec jobRecord
	if err := bson.Unmarshal(doc, &rec); err != nil {
		p := partialMongoJob(doc, err)
		if p.Status.Done() {
			return true, nil
		}
		p.Name = name
		aside, err := asideDocument(p.asideRecord(reason, at), doc)
		if err != nil {
			return false, err
		}
		_, err = s.jobs.ReplaceOne(ctx, byID(name), aside)
		return err == nil, err
	}
	if !rec.Status.live() {
		return true, nil
	}
	rev := rec.StatusRevision
	rec.setAside(reason, at)
	set := bson.D{
		{Key: "status", Value: rec.Status},
		{Key: "live", Value: false},
		{Key: "statusRev", Value: rec.StatusRevision},
		{Key: statusWriterField, Value: rand.Text()},
	}
	ur, err := s.jobs.UpdateOne(ctx, writableFilter(name, rev), bson.D{{Key: "$set", Value: set}})
	if err != nil {
		return false, err
	}
	return ur.MatchedCount == 1, nil
}

// asideDocument is the document SetAside stores in place of an unreadable
// one: the record, and the original document, under "original", for an
// operator to inspect.
func asideDocument(rec jobRecord, original bson.Raw) (bson.D, error) {
	b, err := bson.Marshal(rec)
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	var doc bson.D
	if err := bson.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	return append(doc, bson.E{Key: "original", Value: original}), nil
}

// ListFinished is one indexed query (finishOrder), projected to the two
// fields it returns.
func (s *mongoStore) ListFinished(ctx context.Context, limit int) ([]FinishedJob, error) {
	if err := s.gate.enter(ctx); err != nil {
		return nil, fmt.Errorf("store: list finished jobs: %w", err)
	}
	defer s.gate.leave()
	if err := checkFinishedLimit(limit); err != nil {
		return nil, fmt.Errorf("store: list finished jobs: %w", err)
	}
	find := options.Find().
		SetSort(finishedSort).
		SetLimit(int64(limit)).
		SetProjection(bson.D{{Key: "_id", Value: 1}, {Key: "status.finishTime", Value: 1}})
	cur, err := s.jobs.Find(ctx, liveFilter(false), find)
	if err != nil {
		return nil, fmt.Errorf("store: list finished jobs: %w", err)
	}
	defer func() { _ = cur.Close(context.WithoutCancel(ctx)) }()
	var out []FinishedJob
	for cur.Next(ctx) {
		name, ok := cur.Current.Lookup("_id").StringValueOK()
		if !ok {
			continue // not a name any store wrote: no method can address it
		}
		var finish *int64
		if n, ok := cur.Current.Lookup("status", "finishTime").Int64OK(); ok {
			finish = &n
		}
		out = append(out, FinishedJob{Name: name, FinishTime: decodeTime(finish)})
	}
	if err := cur.Err(); err != nil {
		return nil, fmt.Errorf("store: list finished jobs: %w", err)
	}
	return out, nil
}

// finishedSort is ListFinished's order.
var finishedSort = bson.D{{Key: "status.finishTime", Value: 1}, {Key: "_id", Value: 1}}

// CountJobs counts documents by their live flag, which an index with it
// as its prefix serves without reading the documents.
func (s *mongoStore) CountJobs(ctx context.Context) (live, finished int, err error) {
	if err := s.gate.enter(ctx); err != nil {
		return 0, 0, fmt.Errorf("store: count jobs: %w", err)
	}
	defer s.gate.leave()
	l, err := s.jobs.CountDocuments(ctx, liveFilter(true))
	if err != nil {
		return 0, 0, fmt.Errorf("store: count jobs: %w", err)
	}
	f, err := s.jobs.CountDocuments(ctx, liveFilter(false))
	if err != nil {
		return 0, 0, fmt.Errorf("store: count jobs: %w", err)
	}
	return int(l), int(f), nil
}

// DeleteFinished is one deleteMany whose filter repeats the terminal
// test, so a job that is live when the server reaches it is not deleted.
// (A terminal status is final, so none becomes live again.) Deletes need
// no docLocks; see docLocks.
func (s *mongoStore) DeleteFinished(ctx context.Context, names []string) (int, error) {
	if err := s.gate.enter(ctx); err != nil {
		return 0, fmt.Errorf("store: delete finished jobs: %w", err)
	}
	defer s.gate.leave()
	if err := checkDeleteFinished(names); err != nil {
		return 0, fmt.Errorf("store: delete finished jobs: %w", err)
	}
	if len(names) == 0 {
		return 0, nil
	}
	filter := append(bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: names}}}}, liveFilter(false)...)
	res, err := s.jobs.DeleteMany(ctx, filter)
	if err != nil {
		return 0, fmt.Errorf("store: delete finished jobs: %w", err)
	}
	return int(res.DeletedCount), nil
}

func (s *mongoStore) DeleteJob(ctx context.Context, name string) error {
	if err := s.gate.enter(ctx); err != nil {
		return fmt.Errorf("store: delete job %s: %w", name, err)
	}
	defer s.gate.leave()
	res, err := s.jobs.DeleteOne(ctx, byID(name))
	if err != nil {
		return fmt.Errorf("store: delete job %s: %w", name, err)
	}
	if res.DeletedCount == 0 {
		return fmt.Errorf("store: delete job %s: %w", name, ErrNotFound)
	}
	return nil
}

// SaveProgress is one conditional update, whose filter holds the
// revision; only when it matches nothing does a second, cheap read (the
// _id alone) tell a missing job from a stale revision. It sets the new
// revision rather than incrementing it, which comes to the same over the
// matched revision and also holds over a null one. A document stored
// before progress existed has no progressRev, which counts as revision 0
// (null matches an absent field). The document's lock keeps this
// process's other writes of the job apart, as FerretDB v1 needs.
func (s *mongoStore) SaveProgress(ctx context.Context, name string, data []byte, revision int64) (int64, error) {
	if err := s.gate.enter(ctx); err != nil {
		return 0, fmt.Errorf("store: save progress of job %s: %w", name, err)
	}
	defer s.gate.leave()
	if err := checkProgressSize("progress", data); err != nil {
		return 0, fmt.Errorf("store: save progress of job %s: %w", name, err)
	}
	defer s.locks.lock("jobs/" + name)()
	filter := bson.D{{Key: "_id", Value: name}, {Key: "progressRev", Value: revisionFilter(revision)}}
	set := bson.D{{Key: "progress", Value: nilIfEmpty(data)}, {Key: "progressRev", Value: revision + 1}}
	res, err := s.jobs.UpdateOne(ctx, filter, bson.D{{Key: "$set", Value: set}})
	if err != nil {
		return 0, fmt.Errorf("store: save progress of job %s: %w", name, err)
	}
	if res.MatchedCount == 1 {
		return revision + 1, nil
	}
	err = s.jobs.FindOne(ctx, byID(name), options.FindOne().SetProjection(bson.D{{Key: "_id", Value: 1}})).Err()
	switch {
	case errors.Is(err, mongo.ErrNoDocuments):
		return 0, fmt.Errorf("store: save progress of job %s: %w", name, ErrNotFound)
	case err != nil:
		return 0, fmt.Errorf("store: save progress of job %s: %w", name, err)
	}
	return 0, fmt.Errorf("store: save progress of job %s at revision %d: %w", name, revision, ErrConflict)
}

// historyDocument is one application's history on one GPU type.
type historyDocument struct {
	Key     string `bson:"_id"`
	GPUType string `bson:"gpuType"`
	App     string `bson:"app"`
	Data    []byte `bson:"data"`
}

// SaveHistory replaces the whole document, so it needs no lock.
func (s *mongoStore) SaveHistory(ctx context.Context, gpuType, app string, data []byte) error {
	if err := s.gate.enter(ctx); err != nil {
		return fmt.Errorf("store: save history of %q on %s: %w", app, gpuType, err)
	}
	defer s.gate.leave()
	if err := checkHistory(gpuType, data); err != nil {
		return fmt.Errorf("store: save history of %q on %s: %w", app, gpuType, err)
	}
	key := historyKey(gpuType, app)
	doc := historyDocument{Key: key, GPUType: gpuType, App: app, Data: nilIfEmpty(data)}
	upsert := options.Replace().SetUpsert(true)
	_, err := s.histories.ReplaceOne(ctx, byID(key), doc, upsert)
	if mongo.IsDuplicateKeyError(err) {
		// Two first writes raced to insert it; see putScheduler.
		_, err = s.histories.ReplaceOne(ctx, byID(key), doc, upsert)
	}
	if err != nil {
		return fmt.Errorf("store: save history of %q on %s: %w", app, gpuType, err)
	}
	return nil
}

// ListHistories leaves out documents that do not decode, as
// ListSchedulers does.
func (s *mongoStore) ListHistories(ctx context.Context, gpuType string) (map[string][]byte, error) {
	if err := s.gate.enter(ctx); err != nil {
		return nil, fmt.Errorf("store: list histories of %s: %w", gpuType, err)
	}
	defer s.gate.leave()
	if gpuType == "" {
		return nil, errors.New("store: list histories: empty GPU type")
	}
	cur, err := s.histories.Find(ctx, bson.D{{Key: "gpuType", Value: gpuType}})
	if err != nil {
		return nil, fmt.Errorf("store: list histories of %s: %w", gpuType, err)
	}
	defer func() { _ = cur.Close(context.WithoutCancel(ctx)) }()
	var out map[string][]byte
	for cur.Next(ctx) {
		var doc historyDocument
		if err := cur.Decode(&doc); err != nil {
			continue // damaged: left out
		}
		if out == nil {
			out = make(map[string][]byte)
		}
		out[doc.App] = nilIfEmpty(doc.Data)
	}
	if err := cur.Err(); err != nil {
		return nil, fmt.Errorf("store: list histories of %s: %w", gpuType, err)
	}
	return out, nil
}

func (s *mongoStore) GetScheduler(ctx context.Context, gpuType string) (Scheduler, error) {
	if err := s.gate.enter(ctx); err != nil {
		return Scheduler{}, fmt.Errorf("store: get scheduler %s: %w", gpuType, err)
	}
	defer s.gate.leave()
	raw, err := s.schedulers.FindOne(ctx, byID(gpuType)).Raw()
	if errors.Is(err, mongo.ErrNoDocuments) {
		return Scheduler{}, fmt.Errorf("store: get scheduler %s: %w", gpuType, ErrNotFound)
	}
	if err != nil {
		return Scheduler{}, fmt.Errorf("store: get scheduler %s: %w", gpuType, err)
	}
	var rec schedulerRecord
	if err := bson.Unmarshal(raw, &rec); err != nil {
		return Scheduler{}, fmt.Errorf("store: get scheduler %s: %w record: %v", gpuType, ErrDamaged, err)
	}
	return decodeScheduler(rec), nil
}

func (s *mongoStore) ListSchedulers(ctx context.Context) ([]Scheduler, error) {
	if err := s.gate.enter(ctx); err != nil {
		return nil, fmt.Errorf("store: list schedulers: %w", err)
	}
	defer s.gate.leave()
	cur, err := s.schedulers.Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		return nil, fmt.Errorf("store: list schedulers: %w", err)
	}
	defer func() { _ = cur.Close(context.WithoutCancel(ctx)) }()
	var out []Scheduler
	for cur.Next(ctx) {
		var rec schedulerRecord
		if err := cur.Decode(&rec); err != nil {
			continue // damaged: left out (see Store)
		}
		out = append(out, decodeScheduler(rec))
	}
	if err := cur.Err(); err != nil {
		return nil, fmt.Errorf("store: list schedulers: %w", err)
	}
	return out, nil
}

func (s *mongoStore) PutSettings(ctx context.Context, gpuType string, set Settings) error {
	if err := s.putScheduler(ctx, gpuType, "settings", encodeSettings(set)); err != nil {
		return fmt.Errorf("store: put settings of %s: %w", gpuType, err)
	}
	return nil
}

func (s *mongoStore) PutStatus(ctx context.Context, gpuType string, st SchedulerStatus) error {
	rec, err := encodeSchedulerStatus(st)
	if err == nil {
		err = s.putScheduler(ctx, gpuType, "status", rec)
	}
	if err != nil {
		return fmt.Errorf("store: put status of %s: %w", gpuType, err)
	}
	return nil
}

// putScheduler upserts one half (field) of a scheduler document; $set
// leaves the other half as it is, or absent on a new document.
func (s *mongoStore) putScheduler(ctx context.Context, gpuType, field string, value any) error {
	if err := s.gate.enter(ctx); err != nil {
		return err
	}
	defer s.gate.leave()
	if gpuType == "" {
		return errors.New("empty GPU type")
	}
	defer s.locks.lock("schedulers/" + gpuType)()
	update := bson.D{{Key: "$set", Value: bson.D{{Key: field, Value: value}}}}
	upsert := options.UpdateOne().SetUpsert(true)
	_, err := s.schedulers.UpdateOne(ctx, byID(gpuType), update, upsert)
	if mongo.IsDuplicateKeyError(err) {
		// Two first writes raced to insert the document and this one
		// lost; it exists now, so a retry takes the update path.
		_, err = s.schedulers.UpdateOne(ctx, byID(gpuType), update, upsert)
	}
	return err
}

// Close waits for calls in flight, then disconnects.
func (s *mongoStore) Close(ctx context.Context) error {
	if !s.gate.close() {
		return fmt.Errorf("store: close: %w", ErrClosed)
	}
	if err := s.client.Disconnect(ctx); err != nil {
		return fmt.Errorf("store: close: %w", err)
	}
	return nil
}

// docLocks serialises this process's updates of any one document.
// MongoDB applies each update atomically, but FerretDB v1 updates by
// reading the document, changing it in memory and writing it back whole,
// so two concurrent $sets of different fields (SetPriority and SaveStatus,
// PutSettings and PutStatus) lose one of them. Holding a per-document lock
// around updates makes FerretDB correct within one process; processes
// sharing a FerretDB v1 server can still lose concurrent updates of one
// document, which only a server with atomic updates (MongoDB) avoids.
//
// Inserts and deletes need no lock: FerretDB does them atomically.
type docLocks struct {
	seed    maphash.Seed
	stripes [docLockStripes]sync.Mutex
}

// docLockStripes bounds the locks; keys sharing a stripe merely wait for
// each other.
const docLockStripes = 64

// lock locks the stripes of keys (collection/_id) and returns a function
// unlocking them. Stripes are taken in index order so two callers with
// overlapping keys cannot deadlock.
func (l *docLocks) lock(keys ...string) (unlock func()) {
	var want [docLockStripes]bool
	for _, k := range keys {
		want[maphash.String(l.seed, k)%docLockStripes] = true
	}
	for i, w := range want {
		if w {
			l.stripes[i].Lock()
		}
	}
	return func() {
		for i, w := range want {
			if w {
				l.stripes[i].Unlock()
			}
		}
	}
}

func byID(id string) bson.D { return bson.D{{Key: "_id", Value: id}} }
