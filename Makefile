# Voda's everyday commands. Go is the only prerequisite; everything else
# comes from the Go module proxy.

GO        ?= go
BIN       := bin/voda
SHARED    ?= ../shared
POLLUX    := $(SHARED)/traces/pollux
LINTBIN   := $(or $(VODA_TOOLS),$(CURDIR)/.cache/tools)/bin
# The Kubernetes tests that make compat runs against another mpi-operator.
COMPAT_TESTS := TestMPIJobLifecycle|TestProgressFromLogs/MPIJob|TestLeaderFailover|TestMultiGPUMPIJob

.PHONY: all build image run simulate test test-deps sdk-test kube-test compat chart test-short bench load soak fuzz vet fmt fidelity accuracy compare-table goodput-table teams-table placement-table fragmentation-table replay-table dashboard-cost scale clean

all: vet test build

build:
	$(GO) build -o $(BIN) ./cmd/voda

## image: Voda's container image without a container engine (hack/image, go-containerregistry): a static voda,
## CA certificates and user 65532 as an OCI layout in bin/image/layout and a docker tarball bin/image/voda.tar;
## prints the digest, which the same commit reproduces (IMAGE_FLAGS=--platform=linux/arm64 for arm64)
image:
	cd hack/image && $(GO) run . --out $(CURDIR)/bin/image $(IMAGE_FLAGS)

## run: start Voda (API, schedulers, simulated GPU cluster, embedded store) on 127.0.0.1:55587
run:
	$(GO) run ./cmd/voda server

## simulate: replay a generated workload with the default algorithm (no external data needed)
simulate:
	$(GO) run ./cmd/voda simulate

## test: make vet, then every test with the race detector; installs and builds what the tests need first
## (RabbitMQ from Debian; kube-apiserver, etcd, kwok and the Kubeflow operators from the Go module proxy)
## The Kubernetes integration tests run last, alone, so that the other packages' load tests do not compete with the control plane.
## hack/image's tests (the image built twice, read back and run) run without the race detector: they are one goroutine,
## and under it gzipping the 66 MiB layer takes minutes instead of seconds.
test: vet test-deps sdk-test
	$(GO) test -race -count=1 -timeout 20m $$($(GO) list ./... | grep -v '/test/kube$$')
	cd hack/image && $(GO) test -count=1 -timeout 10m ./...
	$(GO) test -race -count=1 -timeout 40m -v ./test/kube
	$(MAKE) compat

## compat: the MPIJob tests (workers of several GPUs included) again, against mpi-operator v0.8.0 (the newest release the Go module proxy serves; the stack runs v0.6.0 otherwise)
compat: test-deps
	VODA_MPI_OPERATOR=v0.8.0 $(GO) test -race -count=1 -timeout 20m -v -run '$(COMPAT_TESTS)' ./test/kube

## sdk-test: the job-side Python library's tests (sdk/python; python3 and its standard library only)
sdk-test:
	python3 -m unittest discover -s sdk/python/tests -t sdk/python

test-deps:
	./hack/test-deps.sh
	./hack/tools.sh

## kube-test: the Kubernetes integration tests alone (control plane, kwok, mpi-operator, training-operator)
kube-test: test-deps
	$(GO) test -race -count=1 -timeout 40m -v ./test/kube ./internal/kube/...

test-short:
	$(GO) test -short ./...

## chart: lint and render the Helm chart (deploy/helm/voda) with its test value sets and check that
## deploy/rbac.yaml and deploy/roles.yaml are its rendering (helm comes from hack/tools.sh). The chart has no default
## image and helm lint skips the templates' fail, so the lint names one to check what an installation renders
chart:
	./hack/tools.sh helm
	$(LINTBIN)/helm lint --strict deploy/helm/voda --set image.repository=registry.example.com/voda,image.tag=v0.1.0
	$(GO) test -count=1 ./test/chart

## bench: the allocation, scheduler cycle, placement and simulator speed benchmarks; the simulator's size matrix
## (5,000 to 100,000 jobs, docs/simulator.md#cost) runs once per size, about 80 s of CPU in all
bench:
	$(GO) test ./internal/algorithm -run '^$$' -bench 'BenchmarkAllocate' -benchtime 20x
	$(GO) test ./internal/scheduler -run '^$$' -bench 'BenchmarkCycle' -benchtime 5x
	$(GO) test ./internal/placement -run '^$$' -bench 'Benchmark(Place|Check)$$' -benchtime 50x
	$(GO) test ./internal/sim -run '^$$' -bench 'BenchmarkSimulate(TiresiasWorkload6|Generated|GoodputAdaptive|ElasticFIFOWorkload6)$$' -benchtime 10x
	$(GO) test ./internal/sim -run '^$$' -bench 'BenchmarkSimulateGeneratedSizes' -benchtime 1x -timeout 30m

## load: 1,000 concurrent submissions against the embedded and the MongoDB+RabbitMQ deployments,
## and on a control plane without authentication and with --authentication kubernetes
load: test-deps
	VODA_PROGRESS_LOAD_JOBS=1000 $(GO) test ./test/e2e -run 'TestLoad|TestProgressLoad' -count=1 -v
	$(GO) test ./test/kube -run 'TestLoadWithKubernetesAuth' -count=1 -v

## dashboard-cost: the server's CPU, memory and Go heap with 1,000 jobs, 60 s without a dashboard, with 10 open in one
## Chromium (the cluster view and its jobs table), and without again; each page's time to show every job
## (test/browser TestDashboardLoad at full size; Chromium and playwright-core as make test installs them, node on PATH)
dashboard-cost:
	./hack/test-deps.sh
	./hack/tools.sh browser
	VODA_DASHBOARD_LOAD_JOBS=1000 VODA_DASHBOARD_LOAD_PAGES=10 VODA_DASHBOARD_LOAD_WINDOW=60s \
	  $(GO) test ./test/browser -run TestDashboardLoad -count=1 -v -timeout 20m

## scale: a year of jobs. The embedded store's reads and retention at 1k/10k/100k finished jobs and FerretDB's at
## 1k/10k; the binary on 100,000 finished and 1,000 live jobs (list latency, memory, every page, a retention pass;
## its CPU with 0, 1 and 10 idle dashboards, its memory with 100 event streams that never read);
## 5,000 silent connections and 20,000 keep-alives from one client against new clients' /healthz and job lists
scale:
	$(GO) test ./internal/store -run '^$$' -bench BenchmarkScaleBolt -benchtime 20x -timeout 30m
	$(GO) test ./internal/store -run '^$$' -bench BenchmarkScaleFerretDB -benchtime 3x -timeout 30m
	$(GO) test ./test/e2e -run '^$$' -bench BenchmarkJobsAt100k -benchtime 1x -timeout 30m -v
	VODA_SCALE_WINDOW=30 $(GO) test ./test/e2e -run '^$$' -bench BenchmarkEventStreamsAt100k -benchtime 1x -timeout 30m -v
	VODA_FLOOD_SILENT=5000 VODA_FLOOD_KEEPALIVES=20000 VODA_FLOOD_SLOW=5000 \
	  $(GO) test ./test/e2e -run TestFloodCannotLockOut -count=1 -v -timeout 20m

## soak: one voda server (embedded store, simulated v100=64x8 cluster, --speed 500, --max-finished-jobs 20000) through
## 100,000 short jobs submitted over 10 minutes in a steady stream and bursts of 2,000, with 3 reading dashboards, stalled
## event streams and progress reporters (test/soak; any VODA_SOAK_* variable in the environment wins). Prints a table over
## time and writes soak-JOBS.csv and soak-JOBS.png under $$VODA_ARTIFACTS (default .cache/artifacts). `make test` runs
## the small version (2,000 jobs, under two minutes). Without the race detector: it measures the server.
soak:
	VODA_SOAK_JOBS=$${VODA_SOAK_JOBS:-100000} VODA_SOAK_DURATION=$${VODA_SOAK_DURATION:-10m} \
	  VODA_SOAK_BURST=$${VODA_SOAK_BURST:-2000} VODA_SOAK_MAX_FINISHED=$${VODA_SOAK_MAX_FINISHED:-20000} \
	  VODA_SOAK_INTERVAL=$${VODA_SOAK_INTERVAL:-15s} \
	  $(GO) test ./test/soak -run 'TestSoak$$' -count=1 -v -timeout 90m

## fuzz: run every fuzz target in the repository for FUZZTIME (default 30s) each, and print execs per target
fuzz:
	./hack/fuzz.sh

## fidelity: the artifact's Tiresias on Pollux workloads 1-8 (needs ../shared)
fidelity:
	$(GO) test ./internal/sim -run Fidelity -v -count=1

## accuracy: the collector's predictions against the Pollux profiles, by application (needs ../shared; docs/progress.md)
accuracy:
	$(GO) test ./internal/sim/accuracy -run TestCollectorAccuracy -v -count=1

## compare-table: all nine algorithms on the 1.0x and 2.0x Pollux workloads
compare-table: build
	@for load in "" -2.0; do for mode in "" --oracle; do \
	  echo "== workloads$$load $$mode"; \
	  $(BIN) simulate --workload $(POLLUX)/workloads$$load --profiles $(POLLUX)/traces --interval 60s --compare all --placer greedy -q $$mode | tail -10; \
	done; done

## goodput-table: Goodput with adaptive batches (online estimates only) at the four loads of the Pollux workloads
## (avg JCT, p99 JCT, makespan: mean over the eight workloads) beside the artifact's recorded Pollux and Tiresias
## (hack/recorded); then all nine algorithms with fixed and adaptive batches on the 1.0x and 2.0x workloads, by
## application; then Goodput against the artifact's Tiresias on eight generated (unseen) workloads
goodput-table: build
	@for load in -0.5 "" -1.5 -2.0; do \
	  echo "== workloads$$load: Goodput, adaptive batches"; \
	  $(BIN) simulate --workload $(POLLUX)/workloads$$load --profiles $(POLLUX)/traces --interval 60s --algorithm Goodput --adaptive-batch -q | sed -n '/== mean over/,$$p' | sed -n 2,3p; \
	done
	@echo "== recorded by the Pollux artifact"; $(GO) run ./hack/recorded -pollux $(POLLUX)
	@for load in "" -2.0; do for mode in "" --adaptive-batch; do \
	  echo "== workloads$$load $${mode:-fixed batch}"; \
	  $(BIN) simulate --workload $(POLLUX)/workloads$$load --profiles $(POLLUX)/traces --interval 60s --compare all -q --by-app $$mode | sed -n '/== mean over/,$$p'; \
	done; done
	@for load in 1 2; do \
	  dir=$$(mktemp -d); \
	  $(BIN) workload generate --profiles $(POLLUX)/traces --seed 101 --count 8 --load $$load -o $$dir >/dev/null 2>&1; \
	  echo "== generated workloads 101-108 at $$load.0x: artifact Tiresias, then Goodput with adaptive batches"; \
	  $(BIN) simulate --workload $$dir --profiles $(POLLUX)/traces --interval 60s --algorithm Tiresias --param threshold=57600 --param starvation=0 --placer greedy -q | sed -n '/== mean over/,$$p' | tail -1; \
	  $(BIN) simulate --workload $$dir --profiles $(POLLUX)/traces --interval 60s --algorithm Goodput --adaptive-batch -q | sed -n '/== mean over/,$$p' | tail -1; \
	  rm -rf $$dir; \
	done

## goodput-grid: Goodput with adaptive batches on the eight 1.0x Pollux workloads at every scheduling interval (30 s to
## 8 min) and restart cost (0 to 120 s): every job must finish; the artifact recorded Pollux at 30 s..8 min in
## results-period (2,729 / 2,751 / 2,806 / 2,969 / 3,354 s); about 10 minutes
goodput-grid: build
	@printf "%-9s %-8s %s\n" interval restart "done avgJCT p50 p99 makespan queue util restarts/job migrations/job"
	@for iv in 30s 60s 2m 4m 8m; do for rc in 0s 15s 30s 60s 120s; do \
	  printf "%-9s %-8s " $$iv $$rc; \
	  $(BIN) simulate --workload $(POLLUX)/workloads --profiles $(POLLUX)/traces --interval $$iv --restart-cost $$rc \
	    --algorithm Goodput --adaptive-batch -q | awk '/^Goodput +topology +[0-9]+\/[0-9]+ /{print $$3,$$4,$$5,$$6,$$7,$$8,$$9,$$10,$$11}'; \
	done; done

## teams-table: the cost of fairness. Goodput with adaptive batches on the 1.0x and 2.0x Pollux workloads, the jobs
## split among 4 teams guaranteed 16 GPUs each, equally (round-robin) and skewed (team-1 half the jobs), with the
## quotas held and ignored (--ignore-quotas: the schedule without teams, reported by team), at a 60 s interval as
## goodput-table runs it and event-driven as the server runs; mean over the eight workloads, then the teams table
## (share of the GPUs against entitlement, finish-time fairness, reclaims); about 8 minutes on 2 cores
teams-table: build
	@for iv in 60s 0; do for load in "" -2.0; do for split in equal:4 skewed:4; do for mode in --ignore-quotas ""; do \
	  echo "== workloads$$load --interval $$iv --teams $$split $${mode:-(quotas held)}"; \
	  $(BIN) simulate --workload $(POLLUX)/workloads$$load --profiles $(POLLUX)/traces --interval $$iv --algorithm Goodput \
	    --adaptive-batch --teams $$split $$mode -q | sed -n '/== mean over/,$$p'; \
	  echo; \
	done; done; done; done

## placement-table: greedy against topology placement for three elastic algorithms on the 1.0x and 2.0x Pollux workloads
placement-table: build
	@for load in "" -2.0; do \
	  echo "== workloads$$load"; \
	  $(BIN) simulate --workload $(POLLUX)/workloads$$load --profiles $(POLLUX)/traces --interval 60s --compare ElasticFIFO,ElasticTiresias,AFS-L --placer greedy,topology -q | tail -8; \
	done

## fragmentation-table: workers of several GPUs (issue 29): eight generated workloads (seeds 101-108) where a third of the
## jobs' workers hold 2, 4 or 8 GPUs, on 8 nodes of 8 GPUs, then on a cluster mixing sizes, 4 nodes of 8 GPUs and 8 of 4
## (the same 64 GPUs): the fragmentation-aware topology placer against plain first fit (greedy), with GPU utilisation,
## average JCT and stranded GPU-hours (free but too split for the jobs that waited)
fragmentation-table: build
	@dir=$$(mktemp -d); \
	$(BIN) workload generate --profiles $(POLLUX)/traces --seed 101 --count 8 --multi-gpu-share 0.33 -o $$dir >/dev/null 2>&1; \
	for cluster in 8x8 4x8,8x4; do \
	  echo "== cluster $$cluster (nodes x GPUs)"; \
	  $(BIN) simulate --workload $$dir --profiles $(POLLUX)/traces --cluster $$cluster --interval 60s \
	    --compare ElasticFIFO,ElasticTiresias,AFS-L,FfDLOptimizer --placer topology,greedy -q | sed -n '/== mean over/,$$p'; \
	done; \
	rm -rf $$dir

## replay-table: voda workload replay against a voda server (16x4 simulated GPUs, the Pollux profiles, Goodput, --speed
## REPLAY_SPEED) on the eight 1.0x Pollux workloads (REPLAY_LOADS="" -2.0 adds 2.0x), the server's mean JCT and makespan
## against the simulator's with the same settings, and their means over the workloads (docs/simulator.md#replaying-against-a-server);
## minutes per workload
REPLAY_SPEED     ?= 200
REPLAY_LOADS     ?= ""
REPLAY_ALGORITHM ?= Goodput
replay-table: build
	@sums=$$(mktemp); for load in $(REPLAY_LOADS); do for wl in $(POLLUX)/workloads$$load/workload-*.csv; do \
	  dir=$$(mktemp -d); addr=127.0.0.1:55599; \
	  $(BIN) server --addr $$addr --data-dir $$dir --sim-nodes sim=16x4 --profiles $(POLLUX)/traces \
	    --algorithm $(REPLAY_ALGORITHM) --speed $(REPLAY_SPEED) --log-level error & pid=$$!; \
	  for i in $$(seq 150); do $(BIN) get schedulers --server $$addr >/dev/null 2>&1 && break; sleep 0.2; done; \
	  echo "== workloads$$load/$$(basename $$wl)"; \
	  $(BIN) workload replay --server $$addr --workload $$wl --profiles $(POLLUX)/traces --compare -q --timeout 3h | sed -n '/^workload /,$$p' | tee -a $$sums; \
	  kill $$pid; wait $$pid; rm -rf $$dir; \
	done; done; \
	awk '/^server +[0-9]/{ s += $$3; n++ } /^simulator +[0-9]/{ m += $$3 } \
	  END { if (n) printf "mean over %d workloads: server %.1f s, simulator %.1f s, %+.1f%%\n", n, s/n, m/n, (s/m-1)*100 }' $$sums; rm -f $$sums

## vet: go vet, staticcheck, and deadcode failing on any function not even the tests reach (hack/lint-tools.sh installs the two linters)
vet:
	./hack/lint-tools.sh
	$(GO) vet ./...
	cd hack/image && $(GO) vet ./...
	$(LINTBIN)/staticcheck ./...
	cd hack/image && $(LINTBIN)/staticcheck ./...
	dead="$$($(LINTBIN)/deadcode -test ./...)" || exit 1; if [ -n "$$dead" ]; then \
	  echo "$$dead"; echo "deadcode: unreachable even from the tests; delete it or give it a use"; exit 1; fi

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf bin
