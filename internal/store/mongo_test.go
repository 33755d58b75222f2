package store_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/store"
	"github.com/vodascheduler/voda/internal/store/storetest"
)

// mongoTestURI names the environment variable with a real MongoDB server
// to run the suite against, in addition to the embedded FerretDB.
const mongoTestURI = "VODA_TEST_MONGODB_URI"

// mongoFactory gives each test a fresh database from uri.
func mongoFactory(uri func(testing.TB) string) storetest.Factory {
	return func(t *testing.T) storetest.Opener {
		u := uri(t)
		return func(ctx context.Context) (store.Store, error) {
			return store.Open(ctx, u, "")
		}
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
	if diff := cmp.Diff([]string{"_id_", "gpuTypeLive", "submitOrder"}, names, cmpSorted()); diff != "" {
		t.Errorf("job indexes (-want +got):\n%s", diff)
	}
}

// TestMain removes the embedded FerretDB's files after the tests.
func TestMain(m *testing.M) { storetest.Main(m) }
