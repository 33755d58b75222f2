package store

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"maps"
	"slices"
	"sync"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/connstring"
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
// schedulers by GPU type.
type mongoStore struct {
	gate       gate
	locks      docLocks
	client     *mongo.Client
	jobs       *mongo.Collection
	schedulers *mongo.Collection
}

var _ Store = (*mongoStore)(nil)

// openMongo connects, checks the server answers, and creates indexes.
func openMongo(ctx context.Context, uri string) (*mongoStore, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("store: open mongodb: %w", err)
	}
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
		return nil, fmt.Errorf("store: open mongodb: %w", err)
	}
	db := client.Database(dbName)
	s := &mongoStore{client: client, jobs: db.Collection("jobs"), schedulers: db.Collection("schedulers")}
	s.locks.seed = maphash.MakeSeed()
	if err := s.init(ctx); err != nil {
		_ = client.Disconnect(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("store: open mongodb database %s: %w", dbName, err)
	}
	return s, nil
}

// init pings first so an unreachable server fails Open rather than the
// first request, then creates the indexes ListJobs relies on.
func (s *mongoStore) init(ctx context.Context) error {
	if err := s.client.Ping(ctx, nil); err != nil {
		return fmt.Errorf("ping: %w", err)
	}
	indexes := []mongo.IndexModel{
		// ListJobs' order.
		{Keys: bson.D{{Key: "spec.submitTime", Value: 1}, {Key: "_id", Value: 1}},
			Options: options.Index().SetName("submitOrder")},
		// A scheduler's query: its GPU type's live jobs.
		{Keys: bson.D{{Key: "spec.gpuType", Value: 1}, {Key: "live", Value: 1}},
			Options: options.Index().SetName("gpuTypeLive")},
	}
	// One at a time: creating an existing index is a no-op, but FerretDB
	// v1.24 panics (and drops the connection) when one createIndexes call
	// names two indexes that already exist, as every reopen does.
	for _, idx := range indexes {
		if _, err := s.jobs.Indexes().CreateOne(ctx, idx); err != nil {
			return fmt.Errorf("create job index: %w", err)
		}
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
	var rec jobRecord
	err := s.jobs.FindOne(ctx, byID(name)).Decode(&rec)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return Job{}, fmt.Errorf("store: get job %s: %w", name, ErrNotFound)
	}
	if err != nil {
		return Job{}, fmt.Errorf("store: get job %s: %w", name, err)
	}
	return decodeJob(rec), nil
}

func (s *mongoStore) ListJobs(ctx context.Context, opts ListOptions) ([]Job, error) {
	if err := s.gate.enter(ctx); err != nil {
		return nil, fmt.Errorf("store: list jobs: %w", err)
	}
	defer s.gate.leave()
	filter := bson.D{}
	if opts.GPUType != "" {
		filter = append(filter, bson.E{Key: "spec.gpuType", Value: opts.GPUType})
	}
	if opts.Live {
		filter = append(filter, bson.E{Key: "live", Value: true})
	}
	// Times are int64 nanoseconds and the zero time is null, which MongoDB
	// sorts before every number: the same order as time.Time.Compare.
	sort := bson.D{{Key: "spec.submitTime", Value: 1}, {Key: "_id", Value: 1}}
	cur, err := s.jobs.Find(ctx, filter, options.Find().SetSort(sort))
	if err != nil {
		return nil, fmt.Errorf("store: list jobs: %w", err)
	}
	var recs []jobRecord
	if err := cur.All(ctx, &recs); err != nil {
		return nil, fmt.Errorf("store: list jobs: %w", err)
	}
	var jobs []Job
	for _, r := range recs {
		jobs = append(jobs, decodeJob(r))
	}
	return jobs, nil
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

// SaveStatus sends one unordered bulk of $set updates. A bulk result only
// counts matches, so when some did not match it asks which names exist;
// a job created between the two steps would be wrongly taken as present,
// which cannot happen to the scheduler, whose jobs exist before it saves
// their status.
func (s *mongoStore) SaveStatus(ctx context.Context, statuses map[string]JobStatus) ([]string, error) {
	if err := s.gate.enter(ctx); err != nil {
		return nil, fmt.Errorf("store: save status: %w", err)
	}
	defer s.gate.leave()
	recs, err := encodeStatuses(statuses)
	if err != nil {
		return nil, fmt.Errorf("store: save status: %w", err)
	}
	if len(recs) == 0 {
		return nil, nil
	}
	names, models := statusUpdates(recs)
	keys := make([]string, len(names))
	for i, name := range names {
		keys[i] = "jobs/" + name
	}
	defer s.locks.lock(keys...)()
	var matched int64
	for start := 0; start < len(models); start += saveBatch {
		end := min(start+saveBatch, len(models))
		res, err := s.jobs.BulkWrite(ctx, models[start:end], options.BulkWrite().SetOrdered(false))
		if err != nil {
			return nil, fmt.Errorf("store: save status: %w", err)
		}
		matched += res.MatchedCount
	}
	if matched == int64(len(names)) {
		return nil, nil
	}
	missing, err := s.absent(ctx, names)
	if err != nil {
		return nil, fmt.Errorf("store: save status: %w", err)
	}
	return missing, nil
}

// saveBatch bounds the updates of one bulk write. FerretDB v1.24 stops
// answering a bulk write of about 100 updates or more (50 take 0.2 s, 100
// never return), so SaveStatus sends a cycle's statuses in batches.
const saveBatch = 32

// statusUpdates returns the job names in order and one $set of status
// (and the live flag derived from it) per name.
func statusUpdates(recs map[string]statusRecord) ([]string, []mongo.WriteModel) {
	names := slices.Sorted(maps.Keys(recs))
	models := make([]mongo.WriteModel, len(names))
	for i, name := range names {
		set := bson.D{{Key: "status", Value: recs[name]}, {Key: "live", Value: recs[name].live()}}
		models[i] = mongo.NewUpdateOneModel().SetFilter(byID(name)).SetUpdate(bson.D{{Key: "$set", Value: set}})
	}
	return names, models
}

// absent returns the names (sorted) that have no job document.
func (s *mongoStore) absent(ctx context.Context, names []string) ([]string, error) {
	cur, err := s.jobs.Find(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: names}}}},
		options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		return nil, fmt.Errorf("find saved jobs: %w", err)
	}
	var found []struct {
		Name string `bson:"_id"`
	}
	if err := cur.All(ctx, &found); err != nil {
		return nil, fmt.Errorf("find saved jobs: %w", err)
	}
	present := make(map[string]bool, len(found))
	for _, f := range found {
		present[f.Name] = true
	}
	var missing []string
	for _, name := range names {
		if !present[name] {
			missing = append(missing, name)
		}
	}
	return missing, nil
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

func (s *mongoStore) GetScheduler(ctx context.Context, gpuType string) (Scheduler, error) {
	if err := s.gate.enter(ctx); err != nil {
		return Scheduler{}, fmt.Errorf("store: get scheduler %s: %w", gpuType, err)
	}
	defer s.gate.leave()
	var rec schedulerRecord
	err := s.schedulers.FindOne(ctx, byID(gpuType)).Decode(&rec)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return Scheduler{}, fmt.Errorf("store: get scheduler %s: %w", gpuType, ErrNotFound)
	}
	if err != nil {
		return Scheduler{}, fmt.Errorf("store: get scheduler %s: %w", gpuType, err)
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
	var recs []schedulerRecord
	if err := cur.All(ctx, &recs); err != nil {
		return nil, fmt.Errorf("store: list schedulers: %w", err)
	}
	var out []Scheduler
	for _, r := range recs {
		out = append(out, decodeScheduler(r))
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
