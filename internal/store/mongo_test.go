package store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/connstring"

	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/store"
	"github.com/vodascheduler/voda/internal/store/storetest"
)

// mongoTestURI names the environment variable with a real MongoDB server
// to run the suite against, in addition to the embedded FerretDB.
const mongoTestURI = "VODA_TEST_MONGODB_URI"

// mongoFactory gives each test a fresh database from uri.
func mongoFactory(uri func(testing.TB) string) storetest.Factory {
	return func(t *testing.T) storetest.Storage {
		u := uri(t)
		return storetest.Storage{
			Open: func(ctx context.Context) (store.Store, error) {
				return store.Open(ctx, u, "")
			},
			Damage: mongoDamager{t: t, uri: u},
		}
	}
}

// mongoDamager writes documents into the store's database with the driver.
type mongoDamager struct {
	t   *testing.T
	uri string
}

func (d mongoDamager) DamageJob(ctx context.Context, name string, dmg storetest.Damage) ([]byte, error) {
	// Nothing readable: a spec and a status that are not documents.
	doc := bson.D{{Key: "_id", Value: name}, {Key: "spec", Value: "garbage"}, {Key: "status", Value: int64(42)}}
	if dmg != (storetest.Damage{}) {
		// A string where the record has a number.
		spec := bson.D{{Key: "name", Value: name}, {Key: "maxWorkers", Value: "eight"}}
		if dmg.GPUType != "" {
			spec = append(spec, bson.E{Key: "gpuType", Value: dmg.GPUType})
		}
		if !dmg.SubmitTime.IsZero() {
			spec = append(spec, bson.E{Key: "submitTime", Value: dmg.SubmitTime.UnixNano()})
		}
		doc = bson.D{{Key: "_id", Value: name}, {Key: "spec", Value: spec}}
		if dmg.Status != "" {
			doc = append(doc,
				bson.E{Key: "status", Value: bson.D{{Key: "state", Value: bson.D{{Key: "status", Value: string(dmg.Status)}}}}},
				bson.E{Key: "live", Value: !dmg.Status.Done()})
		}
		if dmg.StatusRevision != 0 {
			doc = append(doc, bson.E{Key: "statusRev", Value: dmg.StatusRevision})
		}
	}
	raw, err := bson.Marshal(doc)
	if err != nil {
		return nil, err
	}
	_, err = d.jobs().InsertOne(ctx, bson.Raw(raw))
	return raw, err
}

func (d mongoDamager) Original(ctx context.Context, name string) ([]byte, error) {
	doc, err := d.jobs().FindOne(ctx, bson.D{{Key: "_id", Value: name}}).Raw()
	if err != nil {
		return nil, err
	}
	v, err := doc.LookupErr("original")
	if err != nil {
		return nil, nil
	}
	orig, ok := v.DocumentOK()
	if !ok {
		return nil, fmt.Errorf("original is a %s, not a document", v.Type)
	}
	return orig, nil
}

func (d mongoDamager) jobs() *mongo.Collection { return mongoJobs(d.t, d.uri) }

// mongoJobs returns the jobs collection of the database uri names, on a
// client closed when the test ends.
func mongoJobs(t *testing.T, uri string) *mongo.Collection {
	t.Helper()
	client, err := mongo.Connect(options.Client().ApplyURI(uri))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = client.Disconnect(context.Background()) })
	cs, err := connstring.ParseAndValidate(uri)
	if err != nil {
		t.Fatalf("parse %s: %v", uri, err)
	}
	return client.Database(cs.Database).Collection("jobs")
}

// openStore opens the store uri names, closed when the test ends.
func openStore(t *testing.T, uri string) store.Store {
	t.Helper()
	s, err := store.Open(t.Context(), uri, "")
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

func waitingJob(name string) store.Job {
	return store.Job{
		Name: name, Kind: "MPIJob",
		Spec:   model.JobSpec{Name: name, GPUType: "v100", MinWorkers: 1, MaxWorkers: 1, RequestedWorkers: 1},
		Status: store.JobStatus{State: model.JobState{Status: model.StatusWaiting}},
	}
}

// TestMongoNoRevision checks that a document stored before status
// revisions existed, without statusRev, reads and is written as revision 0.
func TestMongoNoRevision(t *testing.T) {
	ctx := t.Context()
	uri := storetest.FerretDB(t)
	s := openStore(t, uri)
	old, oldDone := waitingJob("old"), waitingJob("old-done")
	oldDone.Status.State.Status = model.StatusCompleted
	for _, j := range []store.Job{old, oldDone} {
		if err := s.CreateJob(ctx, j); err != nil {
			t.Fatalf("CreateJob: %v", err)
		}
	}
	jobs := mongoJobs(t, uri)
	if _, err := jobs.UpdateMany(ctx, bson.D{}, bson.D{{Key: "$unset", Value: bson.D{{Key: "statusRev", Value: ""}}}}); err != nil {
		t.Fatalf("unset statusRev: %v", err)
	}
	n, err := jobs.CountDocuments(ctx, bson.D{{Key: "statusRev", Value: bson.D{{Key: "$exists", Value: true}}}})
	if err != nil || n != 0 {
		t.Fatalf("documents with statusRev after unsetting it: %d, %v", n, err)
	}
	if got, err := s.GetJob(ctx, "old"); err != nil || got.StatusRevision != 0 || got.Unreadable != "" {
		t.Fatalf("GetJob = revision %d, unreadable %q, %v; want revision 0", got.StatusRevision, got.Unreadable, err)
	}

	run := store.JobStatus{State: model.JobState{Status: model.StatusRunning}}
	res, err := s.SaveStatus(ctx, map[string]store.StatusWrite{"old": {Status: run, Revision: 1}})
	if err != nil || !cmp.Equal(res, store.SaveResult{Conflicts: []string{"old"}}) {
		t.Errorf("SaveStatus at revision 1 = %+v, %v; want a conflict", res, err)
	}
	res, err = s.SaveStatus(ctx, map[string]store.StatusWrite{"old": {Status: run}, "old-done": {Status: run}})
	if err != nil || !cmp.Equal(res, store.SaveResult{Conflicts: []string{"old-done"}}) {
		t.Errorf("SaveStatus at revision 0 = %+v, %v; want only old-done refused", res, err)
	}
	got, err := s.GetJob(ctx, "old")
	if err != nil || got.StatusRevision != 1 || got.Status.State.Status != model.StatusRunning {
		t.Errorf("GetJob after the write = revision %d, %s, %v; want revision 1, Running", got.StatusRevision, got.Status.State.Status, err)
	}
}

// TestMongoSaveStatusInterleaved writes, between SaveStatus's read and its
// bulk write, what another process could: a newer status, a terminal
// one, a deletion. The conditional updates must not overwrite them, and
// reading back the revisions and writer tokens must report each write
// that was not made.
func TestMongoSaveStatusInterleaved(t *testing.T) {
	ctx := t.Context()
	uri := storetest.FerretDB(t)
	s := openStore(t, uri)
	for _, name := range []string{"a", "b", "c", "d"} {
		if err := s.CreateJob(ctx, waitingJob(name)); err != nil {
			t.Fatalf("CreateJob: %v", err)
		}
	}
	jobs := mongoJobs(t, uri)
	set := func(name string, fields bson.D) {
		if _, err := jobs.UpdateOne(ctx, bson.D{{Key: "_id", Value: name}}, bson.D{{Key: "$set", Value: fields}}); err != nil {
			t.Errorf("update %s: %v", name, err)
		}
	}
	var calls int
	store.SetMongoBeforeBulk(s, func() {
		if calls++; calls > 1 {
			return
		}
		// Another scheduler's write over the same revision.
		set("a", bson.D{{Key: "statusRev", Value: int64(1)}, {Key: "statusWriter", Value: "other"},
			{Key: "status.queuePosition", Value: 9}})
		// Another scheduler's record of the job's end.
		set("b", bson.D{{Key: "statusRev", Value: int64(1)}, {Key: "status.state.status", Value: "Completed"},
			{Key: "live", Value: false}})
		if _, err := jobs.DeleteOne(ctx, bson.D{{Key: "_id", Value: "c"}}); err != nil {
			t.Errorf("delete c: %v", err)
		}
	})

	run := store.JobStatus{State: model.JobState{Status: model.StatusRunning, GPUs: 1}}
	writes := map[string]store.StatusWrite{"a": {Status: run}, "b": {Status: run}, "c": {Status: run}, "d": {Status: run}}
	res, err := s.SaveStatus(ctx, writes)
	if err != nil {
		t.Fatalf("SaveStatus: %v", err)
	}
	if diff := cmp.Diff(store.SaveResult{Missing: []string{"c"}, Conflicts: []string{"a", "b"}}, res); diff != "" {
		t.Errorf("SaveStatus result (-want +got):\n%s", diff)
	}
	check := func(name string, rev int64, status model.Status, queuePosition int) {
		t.Helper()
		got, err := s.GetJob(ctx, name)
		if err != nil {
			t.Fatalf("GetJob %s: %v", name, err)
		}
		if got.StatusRevision != rev || got.Status.State.Status != status || got.Status.QueuePosition != queuePosition {
			t.Errorf("job %s: revision %d, %s, queue position %d; want %d, %s, %d", name,
				got.StatusRevision, got.Status.State.Status, got.Status.QueuePosition, rev, status, queuePosition)
		}
	}
	check("a", 1, model.StatusWaiting, 9)
	check("b", 1, model.StatusCompleted, 0)
	check("d", 1, model.StatusRunning, 0)

	res, err = s.SaveStatus(ctx, map[string]store.StatusWrite{"a": {Status: run, Revision: 1}, "d": {Status: run, Revision: 1}})
	if err != nil || res.Missing != nil || res.Conflicts != nil {
		t.Errorf("SaveStatus over the new revisions = %+v, %v; want both made", res, err)
	}
	check("a", 2, model.StatusRunning, 0)
	check("d", 2, model.StatusRunning, 0)
}

// TestMongoNoProgress checks that a document stored before progress
// existed, without progress and progressRev, reads with nil Progress at
// revision 0 and takes progress writes from 0.
func TestMongoNoProgress(t *testing.T) {
	ctx := t.Context()
	uri := storetest.FerretDB(t)
	s := openStore(t, uri)
	if err := s.CreateJob(ctx, waitingJob("old")); err != nil {
		t.Fatalf("CreateJob: %v", err)
	}
	jobs := mongoJobs(t, uri)
	unset := bson.D{{Key: "$unset", Value: bson.D{{Key: "progress", Value: ""}, {Key: "progressRev", Value: ""}}}}
	if _, err := jobs.UpdateMany(ctx, bson.D{}, unset); err != nil {
		t.Fatalf("unset the progress fields: %v", err)
	}
	doc, err := jobs.FindOne(ctx, bson.D{{Key: "_id", Value: "old"}}).Raw()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := doc.LookupErr("progressRev"); err == nil {
		t.Fatalf("document still has progressRev: %s", doc)
	}
	if got, err := s.GetJob(ctx, "old"); err != nil || got.Progress != nil || got.ProgressRevision != 0 || got.Unreadable != "" {
		t.Fatalf("GetJob = progress %q at revision %d, unreadable %q, %v; want nil at 0", got.Progress, got.ProgressRevision, got.Unreadable, err)
	}
	if _, err := s.SaveProgress(ctx, "old", []byte(`{}`), 1); !errors.Is(err, store.ErrConflict) {
		t.Errorf("SaveProgress at revision 1: %v, want ErrConflict", err)
	}
	if rev, err := s.SaveProgress(ctx, "old", []byte(`{"steps":1}`), 0); err != nil || rev != 1 {
		t.Errorf("SaveProgress at revision 0 = %d, %v; want 1", rev, err)
	}
	got, err := s.GetJob(ctx, "old")
	if err != nil || string(got.Progress) != `{"steps":1}` || got.ProgressRevision != 1 {
		t.Errorf("GetJob after SaveProgress = progress %q at revision %d, %v", got.Progress, got.ProgressRevision, err)
	}
}

func TestMongoFerretDB(t *testing.T) {
	storetest.Run(t, mongoFactory(storetest.FerretDB))
}

func TestMongoServer(t *testing.T) {
	base := os.Getenv(mongoTestURI)
	if base == "" {
		t.Skip(mongoTestURI + " not set; the embedded FerretDB run covers the contract")
	}
	storetest.Run(t, mongoFactory(func(t testing.TB) string {
		return storetest.MongoDatabase(t, base)
	}))
}

// TestMongoDocument checks the default database name, the indexes and
// that documents stay readable: named fields, nanosecond integer times,
// the live flag.
func TestMongoDocument(t *testing.T) {
	ctx := t.Context()
	uri := storetest.FerretDB(t)
	base := uri[:strings.LastIndex(uri, "/")+1] // no database: the default
	s, err := store.Open(ctx, base, "")
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	client, err := mongo.Connect(options.Client().ApplyURI(base))
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	db := client.Database("voda")
	t.Cleanup(func() {
		_ = s.Close(context.Background())
		_ = db.Drop(context.Background())
		_ = client.Disconnect(context.Background())
	})

	submit := time.Date(2024, 1, 2, 3, 4, 5, 6, time.UTC)
	job := store.Job{
		Name: "doc-1", Kind: "MPIJob",
		Spec:   model.JobSpec{Name: "doc-1", GPUType: "v100", MinWorkers: 1, MaxWorkers: 2, RequestedWorkers: 1, SubmitTime: submit},
		Status: store.JobStatus{State: model.JobState{Status: model.StatusWaiting}},
	}
	if err := s.CreateJob(ctx, job); err != nil {
		t.Fatalf("CreateJob: %v", err)
	}
	var doc struct {
		ID   string `bson:"_id"`
		Live bool   `bson:"live"`
		Spec struct {
			GPUType    string `bson:"gpuType"`
			SubmitTime int64  `bson:"submitTime"`
		} `bson:"spec"`
		Status struct {
			State struct {
				Status     string `bson:"status"`
				FirstStart any    `bson:"firstStart"`
			} `bson:"state"`
		} `bson:"status"`
	}
	if err := db.Collection("jobs").FindOne(ctx, bson.D{{Key: "_id", Value: "doc-1"}}).Decode(&doc); err != nil {
		t.Fatalf("find the job in database voda: %v", err)
	}
	if doc.ID != "doc-1" || !doc.Live || doc.Spec.GPUType != "v100" || doc.Spec.SubmitTime != submit.UnixNano() ||
		doc.Status.State.Status != "Waiting" || doc.Status.State.FirstStart != nil {
		t.Errorf("stored document = %+v", doc)
	}

	cur, err := db.Collection("jobs").Indexes().List(ctx)
	if err != nil {
		t.Fatalf("list indexes: %v", err)
	}
	var idx []struct {
		Name string `bson:"name"`
	}
	if err := cur.All(ctx, &idx); err != nil {
		t.Fatalf("list indexes: %v", err)
	}
	var names []string
	for _, i := range idx {
		names = append(names, i.Name)
	}
	if diff := cmp.Diff([]string{"_id_", "finishOrder", "liveOrder", "submitOrder"}, names, cmpSorted()); diff != "" {
		t.Errorf("job indexes (-want +got):\n%s", diff)
	}

	if err := s.SaveHistory(ctx, "v100", "resnet50", []byte(`{"h":1}`)); err != nil {
		t.Fatalf("SaveHistory: %v", err)
	}
	var hist struct {
		ID      string `bson:"_id"`
		GPUType string `bson:"gpuType"`
		App     string `bson:"app"`
		Data    []byte `bson:"data"`
	}
	if err := db.Collection("histories").FindOne(ctx, bson.D{{Key: "gpuType", Value: "v100"}}).Decode(&hist); err != nil {
		t.Fatalf("find the history: %v", err)
	}
	if hist.ID != "v100/resnet50" || hist.App != "resnet50" || string(hist.Data) != `{"h":1}` {
		t.Errorf("stored history = %+v", hist)
	}
	cur, err = db.Collection("histories").Indexes().List(ctx)
	if err != nil {
		t.Fatalf("list history indexes: %v", err)
	}
	idx = nil
	if err := cur.All(ctx, &idx); err != nil {
		t.Fatalf("list history indexes: %v", err)
	}
	names = nil
	for _, i := range idx {
		names = append(names, i.Name)
	}
	if diff := cmp.Diff([]string{"_id_", "gpuType"}, names, cmpSorted()); diff != "" {
		t.Errorf("history indexes (-want +got):\n%s", diff)
	}
}

// TestMongoIndexesOnOpen opens a database as an earlier version left it,
// with jobs and the indexes it created: Open creates the missing indexes
// and drops the one no query uses, logs each, and a second Open changes
// nothing.
func TestMongoIndexesOnOpen(t *testing.T) {
	ctx := t.Context()
	uri := storetest.FerretDB(t)
	jobs := mongoJobs(t, uri)
	old := []mongo.IndexModel{
		{Keys: bson.D{{Key: "spec.submitTime", Value: 1}, {Key: "_id", Value: 1}}, Options: options.Index().SetName("submitOrder")},
		{Keys: bson.D{{Key: "spec.gpuType", Value: 1}, {Key: "live", Value: 1}}, Options: options.Index().SetName("gpuTypeLive")},
	}
	for _, idx := range old {
		if _, err := jobs.Indexes().CreateOne(ctx, idx); err != nil {
			t.Fatalf("create index: %v", err)
		}
	}
	if _, err := jobs.InsertOne(ctx, bson.D{{Key: "_id", Value: "old"}, {Key: "live", Value: false}}); err != nil {
		t.Fatalf("insert: %v", err)
	}
	var logs bytes.Buffer
	open := func() {
		t.Helper()
		logs.Reset()
		s, err := store.Open(ctx, uri, "", store.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		if err := s.Close(ctx); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
	open()
	for _, want := range [][2]string{{"created an index", "index=liveOrder"}, {"created an index", "index=finishOrder"},
		{"dropped an index no query uses", "index=gpuTypeLive"}} {
		if !slices.ContainsFunc(strings.Split(logs.String(), "\n"), func(line string) bool {
			return strings.Contains(line, want[0]) && strings.Contains(line, "collection=jobs "+want[1])
		}) {
			t.Errorf("log %q has no line saying %q of %q", logs.String(), want[0], want[1])
		}
	}
	if strings.Contains(logs.String(), "submitOrder") {
		t.Errorf("log %q names submitOrder, which existed", logs.String())
	}
	if diff := cmp.Diff([]string{"_id_", "finishOrder", "liveOrder", "submitOrder"}, indexNames(t, jobs), cmpSorted()); diff != "" {
		t.Errorf("job indexes (-want +got):\n%s", diff)
	}
	open()
	if logs.Len() != 0 {
		t.Errorf("second Open logged %q, want nothing", logs.String())
	}
}

// TestMongoOddSubmitTime: a document whose submit time is a string (a
// hand edit) sorts after every number on the server, but is returned with
// the zero time; it is listed first without Limit and After, and never in
// a page, so that pages join up and end.
func TestMongoOddSubmitTime(t *testing.T) {
	ctx := t.Context()
	uri := storetest.FerretDB(t)
	s := openStore(t, uri)
	for i, name := range []string{"b", "a", "c"} {
		j := waitingJob(name)
		j.Spec.SubmitTime = time.Unix(int64(i), 0)
		if err := s.CreateJob(ctx, j); err != nil {
			t.Fatalf("CreateJob: %v", err)
		}
	}
	odd := bson.D{{Key: "_id", Value: "odd"}, {Key: "spec", Value: bson.D{{Key: "gpuType", Value: "v100"}, {Key: "submitTime", Value: "soon"}}}, {Key: "live", Value: true}}
	if _, err := mongoJobs(t, uri).InsertOne(ctx, odd); err != nil {
		t.Fatalf("insert: %v", err)
	}
	list, err := s.ListJobs(ctx, store.ListOptions{})
	if err != nil || len(list) != 4 || list[0].Name != "odd" || list[0].Unreadable == "" || !list[0].Spec.SubmitTime.IsZero() {
		t.Fatalf("ListJobs = %+v, %v; want odd first, unreadable, with the zero time", list, err)
	}
	for _, opts := range []store.ListOptions{{Limit: 1}, {Limit: 1, Live: true}, {Limit: 10, After: list[0].Position()}} {
		var got []string
		for range 10 {
			page, err := s.ListJobs(ctx, opts)
			if err != nil {
				t.Fatalf("ListJobs(%+v): %v", opts, err)
			}
			for _, j := range page {
				got = append(got, j.Name)
			}
			if len(page) < opts.Limit {
				break
			}
			opts.After = page[len(page)-1].Position()
		}
		if diff := cmp.Diff([]string{"b", "a", "c"}, got); diff != "" {
			t.Errorf("pages from %+v (-want +got):\n%s", opts, diff)
		}
	}
}

// indexNames lists coll's indexes by name.
func indexNames(t *testing.T, coll *mongo.Collection) []string {
	t.Helper()
	specs, err := coll.Indexes().ListSpecifications(t.Context())
	if err != nil {
		t.Fatalf("list indexes: %v", err)
	}
	var names []string
	for _, s := range specs {
		names = append(names, s.Name)
	}
	return names
}

// TestMongoExplain asks the server how it runs the store's queries. On a
// real MongoDB (VODA_TEST_MONGODB_URI), each reads its index: live jobs
// liveOrder, a page submitOrder, the oldest finished jobs and their count
// finishOrder or liveOrder; none scans the collection, and the ordered
// ones need no sort in memory. FerretDB v1 (SQLite) uses no index for
// any query but an _id lookup: its explain says so, which this checks
// too, so that a FerretDB that does is noticed.
func TestMongoExplain(t *testing.T) {
	t.Run("FerretDB", func(t *testing.T) {
		plans := explainQueries(t, storetest.FerretDB(t))
		for what, plan := range plans {
			if plan["filterPushdown"] != false || !strings.Contains(fmt.Sprint(plan["queryPlanner"]), "SCAN") {
				t.Errorf("%s: FerretDB's plan %v, want a scan with no filter pushed down", what, plan)
			}
		}
	})
	t.Run("MongoDB", func(t *testing.T) {
		base := os.Getenv(mongoTestURI)
		if base == "" {
			t.Skip(mongoTestURI + " not set")
		}
		plans := explainQueries(t, storetest.MongoDatabase(t, base))
		for what, want := range map[string]struct {
			indexes []string
			sorted  bool
		}{
			"live":           {[]string{"liveOrder"}, true},
			"live of a type": {[]string{"liveOrder"}, true},
			"page":           {[]string{"submitOrder"}, true},
			"finished":       {[]string{"finishOrder"}, true},
			"count finished": {[]string{"finishOrder", "liveOrder"}, false},
		} {
			stages, indexes := planStages(plans[what]["queryPlanner"])
			if slices.Contains(stages, "COLLSCAN") || len(indexes) == 0 {
				t.Errorf("%s: plan has stages %v, indexes %v; want no COLLSCAN", what, stages, indexes)
			}
			for _, idx := range indexes {
				if !slices.Contains(want.indexes, idx) {
					t.Errorf("%s: plan reads index %s, want %v", what, idx, want.indexes)
				}
			}
			if want.sorted && slices.Contains(stages, "SORT") {
				t.Errorf("%s: plan sorts in memory: stages %v", what, stages)
			}
		}
	})
}

// explainQueries fills a database with finished and live jobs and returns
// the server's explain output (verbosity queryPlanner) for each query.
func explainQueries(t *testing.T, uri string) map[string]bson.M {
	ctx := t.Context()
	s := openStore(t, uri)
	for i := range 200 {
		j := waitingJob(fmt.Sprintf("job-%03d", i))
		j.Spec.SubmitTime = time.Unix(int64(i), 0)
		if i%20 != 0 {
			j.Status.State.Status = model.StatusCompleted
			j.Status.FinishTime = time.Unix(int64(1000-i), 0)
		}
		if err := s.CreateJob(ctx, j); err != nil {
			t.Fatalf("CreateJob: %v", err)
		}
	}
	db := mongoJobs(t, uri).Database()
	explain := func(cmd bson.D) bson.M {
		var out bson.M
		if err := db.RunCommand(ctx, bson.D{{Key: "explain", Value: cmd}, {Key: "verbosity", Value: "queryPlanner"}}).Decode(&out); err != nil {
			t.Fatalf("explain %v: %v", cmd, err)
		}
		return out
	}
	find := func(opts store.ListOptions, limit int) bson.M {
		filter, order, _, _ := store.MongoQueries(opts)
		cmd := bson.D{{Key: "find", Value: "jobs"}, {Key: "filter", Value: filter}, {Key: "sort", Value: order}}
		if limit > 0 {
			cmd = append(cmd, bson.E{Key: "batchSize", Value: limit})
		}
		return explain(cmd)
	}
	_, _, finished, finishedOrder := store.MongoQueries(store.ListOptions{})
	return map[string]bson.M{
		"live":           find(store.ListOptions{Live: true}, 0),
		"live of a type": find(store.ListOptions{Live: true, GPUType: "v100"}, 0),
		"page":           find(store.ListOptions{Limit: 50, After: store.Position{SubmitTime: time.Unix(100, 0), Name: "job-100"}}, 50),
		"finished": explain(bson.D{{Key: "find", Value: "jobs"}, {Key: "filter", Value: finished},
			{Key: "sort", Value: finishedOrder}, {Key: "limit", Value: 50}}),
		"count finished": explain(bson.D{{Key: "count", Value: "jobs"}, {Key: "query", Value: finished}}),
	}
}

// planStages collects the stage names and index names anywhere in an
// explain output's winning plan.
func planStages(planner any) (stages, indexes []string) {
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case bson.M:
			for k, x := range v {
				switch k {
				case "stage":
					if s, ok := x.(string); ok {
						stages = append(stages, s)
					}
				case "indexName":
					if s, ok := x.(string); ok {
						indexes = append(indexes, s)
					}
				case "rejectedPlans":
					continue
				}
				walk(x)
			}
		case bson.D:
			for _, e := range v {
				walk(bson.M{e.Key: e.Value})
			}
		case bson.A:
			for _, x := range v {
				walk(x)
			}
		}
	}
	if m, ok := planner.(bson.M); ok {
		walk(m["winningPlan"])
	}
	return stages, indexes
}

// TestMain removes the embedded FerretDB's files after the tests.
func TestMain(m *testing.M) { storetest.Main(m) }
