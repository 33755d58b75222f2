#!/usr/bin/env bash
# Starts and stops a throwaway Kubernetes stack for integration tests, all on
# 127.0.0.1: etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
# kwok (fake GPU nodes and pods, stages from hack/kwok/stages.yaml),
# mpi-operator (MPIJob kubeflow.org/v2beta1) and training-operator
# (PyTorchJob kubeflow.org/v1). The binaries come from hack/tools.sh, which
# this script runs first (it builds them on first use, ~10 minutes, and
# returns at once afterwards).
#
# Usage:
#   hack/cluster.sh start DIR   start a stack whose whole state lives in DIR
#                               (created if missing); refuses if DIR already
#                               has a running stack
#   hack/cluster.sh stop DIR    stop the stack of DIR (TERM, then KILL after a
#                               few seconds); idempotent, keeps DIR
#
# After start, DIR holds:
#   kubeconfig          admin kubeconfig (bearer token in group system:masters)
#   pki/tokens.csv      the static tokens: admin's, and those of users alice,
#                       bob (group developers) and carol (group operators),
#                       who may do nothing until bound a role
#   env                 ports and URLs of the stack, KEY=VALUE lines
#   logs/<component>.log, pids/<component>.pid, pki/, etcd/, tmp/, run/
#
# Every port is a free port picked at start (from 20000-31999, below Linux's
# ephemeral range), so stacks of parallel test binaries never collide; a
# short-lived reservation file under /tmp/voda-cluster-ports-$UID keeps two
# stacks that start at the same moment from picking the same ports.
#
# Environment:
#   VODA_TOOLS             tools folder (default <repo>/.cache/tools), as hack/tools.sh
#   VODA_CLUSTER_TIMEOUT   seconds to wait for each component (default 60)
#   VODA_CLUSTER_NETNS     auto (default) or off: see mpi-operator below
#   VODA_MPI_OPERATOR      mpi-operator release: v0.6.0 (default) or v0.8.0
#                          (hack/tools.sh group mpi-v0.8, built on demand),
#                          to run the tests against the newer operator
#   VODA_CLUSTER_OWNER_PID if set, a reaper process stops the stack as soon as
#                          that process is gone (kubetest sets it to the test
#                          binary, so a crashed or timed-out test leaks nothing)
#
# Pitfalls found in the components' sources (and handled here):
# - mpi-operator v0.6.0 always serves its leader-election health check on
#   ":8080" (all interfaces): healthCheckPort is a hard-coded int in
#   cmd/mpi-operator/app/server.go with no flag (-monitoring-port is another,
#   optional listener; 0 disables it), and it exits (klog.Fatalf) when the
#   port is taken. So when unshare, ip and socat are available, mpi-operator
#   runs in its own network namespace, where its :8080 is private; it reaches
#   the apiserver through socat over a Unix socket in DIR/run (the same
#   127.0.0.1:<port> inside, so the same kubeconfig and TLS names work).
#   Without them (or with VODA_CLUSTER_NETNS=off) it runs in the host network
#   namespace and start fails clearly if :8080 is taken: one stack per machine.
#   Its readiness is taken from its log ("Started workers").
# - training-operator v1.9.0 waits for webhook certificates before it starts
#   its controllers: its cert rotator checks that the hard-coded file
#   /tmp/k8s-webhook-server/serving-certs/tls.crt exists (pkg/cert/cert.go),
#   while its webhook server reads tls.crt/tls.key from
#   $TMPDIR/k8s-webhook-server/serving-certs (controller-runtime's default;
#   there is no cert-dir flag). Before starting it we create namespace
#   kubeflow, the Secret training-operator-webhook-cert pre-filled with a CA
#   and serving cert that the rotator accepts (so it keeps them), an empty
#   ValidatingWebhookConfiguration validator.training-operator.kubeflow.org
#   (so the apiserver never calls the webhook), write the pair into
#   DIR/tmp/k8s-webhook-server/serving-certs (TMPDIR=DIR/tmp for the process)
#   and create the /tmp placeholder if it is missing (only its existence is
#   checked). Its webhook port has no host flag, so it listens on all
#   interfaces (on a free port); metrics and health bind 127.0.0.1.
set -euo pipefail

script="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")"
root="$(cd "$(dirname "$script")/.." && pwd)"
tools="${VODA_TOOLS:-$root/.cache/tools}"
bin="$tools/bin"
timeout="${VODA_CLUSTER_TIMEOUT:-60}"

log() { echo "hack/cluster.sh: $*" >&2; }
die() {
	log "$*"
	exit 1
}

now() {
	if [[ -n ${EPOCHREALTIME:-} ]]; then
		echo "${EPOCHREALTIME/,/.}"
	else
		date +%s.%N
	fi
}

# proc_start PID: the start time of a process (field 22 of /proc/PID/stat),
# used to tell our process from a later one that reuses its pid.
proc_start() {
	local stat
	stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
	stat="${stat##*) }"
	# shellcheck disable=SC2086
	set -- $stat
	echo "${20}"
}

# group_state PIDFILE: prints "ours" if the process group recorded in PIDFILE
# may be signalled (its leader is our process, or the leader is gone and only
# its group members remain: a pid cannot be reused while it names a live
# process group), "reused" if the pid now names someone else, "gone" if nothing
# of it is left.
group_state() {
	local pid start cur
	read -r pid start <"$1" 2>/dev/null || {
		echo gone
		return
	}
	[[ -n $pid ]] || {
		echo gone
		return
	}
	if cur="$(proc_start "$pid")"; then
		if [[ $cur == "$start" ]]; then
			echo ours
		else
			echo reused
		fi
	elif kill -0 -- "-$pid" 2>/dev/null; then
		echo ours
	else
		echo gone
	fi
}

stack_running() {
	local f
	for f in "$1"/pids/*.pid; do
		[[ -e $f ]] || continue
		[[ $(group_state "$f") == ours ]] && return 0
	done
	return 1
}

cmd_stop() {
	local dir=$1 f pid start i any
	[[ -d $dir/pids ]] || return 0
	local groups=()
	for f in "$dir"/pids/*.pid; do
		[[ -e $f ]] || continue
		if [[ $(group_state "$f") == ours ]]; then
			read -r pid start <"$f"
			groups+=("$pid")
			kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
		fi
	done
	for ((i = 0; i < 50; i++)); do
		any=0
		for pid in ${groups[@]+"${groups[@]}"}; do
			if kill -0 -- "-$pid" 2>/dev/null; then
				any=1
				break
			fi
		done
		[[ $any == 0 ]] && break
		sleep 0.1
	done
	for pid in ${groups[@]+"${groups[@]}"}; do
		if kill -0 -- "-$pid" 2>/dev/null; then
			log "killing process group $pid (did not stop after TERM)"
			kill -KILL -- "-$pid" 2>/dev/null || true
		fi
	done
	rm -f "$dir"/pids/*.pid
}

# ---------------------------------------------------------------- start ----

# fail COMPONENT MESSAGE: the start failed because of COMPONENT.
fail() {
	local name=$1 msg=$2
	log "$name: $msg"
	if [[ -f $dir/logs/$name.log ]]; then
		log "last lines of $dir/logs/$name.log:"
		tail -n 40 "$dir/logs/$name.log" | sed 's/^/    | /' >&2
	fi
	exit 1
}

# alive COMPONENT: its main process is running (not gone, not a zombie).
alive() {
	local pid start stat
	read -r pid start <"$dir/pids/$1.pid" 2>/dev/null || return 1
	stat="$(cat "/proc/$pid/stat" 2>/dev/null)" || return 1
	stat="${stat##*) }"
	# shellcheck disable=SC2086
	set -- $stat
	[[ $1 != Z && ${20} == "$start" ]]
}

# wait_for COMPONENT WHAT CMD...: polls CMD until it succeeds; fails naming
# COMPONENT if it exits meanwhile or the timeout passes.
wait_for() {
	local name=$1 what=$2
	shift 2
	local deadline=$((SECONDS + timeout))
	until "$@" >/dev/null 2>&1; do
		alive "$name" || fail "$name" "exited while waiting for $what"
		((SECONDS < deadline)) || fail "$name" "not ready after ${timeout}s (waiting for $what)"
		sleep 0.1
	done
}

# launch COMPONENT [VAR=VALUE...] -- CMD...: starts CMD in the background in a
# session (and process group) of its own, output to logs/COMPONENT.log.
launch() {
	local name=$1
	shift
	local envs=()
	while [[ $1 != -- ]]; do
		envs+=("$1")
		shift
	done
	shift
	setsid env ${envs[@]+"${envs[@]}"} "$@" </dev/null >"$dir/logs/$name.log" 2>&1 &
	local pid=$!
	echo "$pid $(proc_start "$pid")" >"$dir/pids/$name.pid"
}

# pick_ports VAR...: assigns a distinct free 127.0.0.1 port to each VAR.
pick_ports() {
	local reg="/tmp/voda-cluster-ports-$(id -u)"
	mkdir -p "$reg"
	local lockfd
	exec {lockfd}>"$reg/.lock"
	if command -v flock >/dev/null; then
		flock "$lockfd"
	fi
	find "$reg" -name '*.ports' -mmin +3 -delete 2>/dev/null || true
	local -A taken=()
	local p
	for p in $(cat "$reg"/*.ports 2>/dev/null); do
		taken[$p]=1
	done
	local have_ss=0
	if command -v ss >/dev/null; then
		have_ss=1
		for p in $(ss -Htan 2>/dev/null | awk '{n = split($4, a, ":"); print a[n]}'); do
			taken[$p]=1
		done
	fi
	local var tries picked=()
	for var in "$@"; do
		for ((tries = 0; ; tries++)); do
			((tries < 1000)) || die "no free port found in 20000-31999"
			p=$((((RANDOM << 15) | RANDOM) % 12000 + 20000))
			[[ -z ${taken[$p]:-} ]] || continue
			if [[ $have_ss == 0 ]] && (: <"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
				continue
			fi
			break
		done
		taken[$p]=1
		picked+=("$p")
		printf -v "$var" %s "$p"
	done
	echo "${picked[*]}" >"$reg/$$.$RANDOM.ports"
	exec {lockfd}>&-
}

http_ok() { curl -sf -o /dev/null --max-time 2 "$@"; }

gen_pki() {
	local pki=$1
	(
		cd "$pki"
		# Apiserver CA and serving certificate (ECDSA: fast to generate).
		openssl ecparam -name prime256v1 -genkey -noout -out ca.key 2>/dev/null
		openssl req -x509 -new -key ca.key -subj /CN=voda-test-ca -days 3650 -out ca.crt \
			-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
		openssl ecparam -name prime256v1 -genkey -noout -out apiserver.key 2>/dev/null
		openssl req -new -key apiserver.key -subj /CN=kube-apiserver |
			openssl x509 -req -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 -out apiserver.crt \
				-extfile <(printf '%s\n' \
					'subjectAltName=IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local' \
					'extendedKeyUsage=serverAuth' 'keyUsage=critical,digitalSignature') 2>/dev/null
		# Service-account token signing key pair.
		openssl ecparam -name prime256v1 -genkey -noout -out sa.key 2>/dev/null
		openssl ec -in sa.key -pubout -out sa.pub 2>/dev/null
		# training-operator webhook CA and serving certificate, in the form
		# its cert rotator (open-policy-agent/cert-controller) accepts and
		# keeps: RSA PKCS#1 CA key, CA valid for DNS name
		# training-operator-ca, server cert for training-operator.kubeflow.svc
		# valid longer than the 90-day lookahead.
		openssl genrsa -traditional -out webhook-ca.key 2048 2>/dev/null
		openssl req -x509 -new -key webhook-ca.key -subj /O=training-operator/CN=training-operator-ca \
			-days 3650 -out webhook-ca.crt \
			-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,digitalSignature \
			-addext subjectAltName=DNS:training-operator-ca
		openssl genrsa -traditional -out webhook.key 2048 2>/dev/null
		openssl req -new -key webhook.key -subj /O=training-operator/CN=training-operator.kubeflow.svc |
			openssl x509 -req -CA webhook-ca.crt -CAkey webhook-ca.key -CAcreateserial -days 3650 -out webhook.crt \
				-extfile <(printf '%s\n' 'subjectAltName=DNS:training-operator.kubeflow.svc' \
					'extendedKeyUsage=serverAuth' 'keyUsage=critical,digitalSignature,keyEncipherment') 2>/dev/null
	)
}

b64() { base64 -w0 <"$1"; }

# bootstrap_objects: namespaces and training-operator's webhook objects.
bootstrap_objects() {
	local pki=$dir/pki
	cat <<EOF
apiVersion: v1
kind: Namespace
metadata:
  name: mpi-operator
---
apiVersion: v1
kind: Namespace
metadata:
  name: kubeflow
---
apiVersion: v1
kind: Secret
metadata:
  name: training-operator-webhook-cert
  namespace: kubeflow
type: Opaque
data:
  ca.crt: $(b64 "$pki/webhook-ca.crt")
  ca.key: $(b64 "$pki/webhook-ca.key")
  tls.crt: $(b64 "$pki/webhook.crt")
  tls.key: $(b64 "$pki/webhook.key")
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: validator.training-operator.kubeflow.org
EOF
}

# netns_mode: prints the unshare flags that give mpi-operator a network
# namespace of its own, or nothing if that is not possible here.
netns_mode() {
	[[ ${VODA_CLUSTER_NETNS:-auto} == off ]] && return 0
	command -v unshare >/dev/null && command -v socat >/dev/null && command -v ip >/dev/null || return 0
	if unshare -n true 2>/dev/null; then
		printf "%s\n" "-n"
	elif unshare -r -n true 2>/dev/null; then
		printf "%s\n" "-r -n"
	fi
}

# cmd_netns_exec RUNDIR PORT -- CMD...: runs inside the new network
# namespace: brings lo up, forwards 127.0.0.1:PORT to RUNDIR/api.sock (the
# host-side socat forwards that to the apiserver) and execs CMD.
cmd_netns_exec() {
	local rundir=$1 port=$2
	shift 2
	[[ ${1:-} == -- ]] && shift
	ip link set lo up
	(cd "$rundir" && exec socat "TCP-LISTEN:$port,bind=127.0.0.1,reuseaddr,fork" UNIX-CONNECT:api.sock) &
	local i
	for ((i = 0; i < 100; i++)); do
		ss -Hltn "sport = :$port" 2>/dev/null | grep -q . && break
		sleep 0.05
	done
	exec "$@"
}

cmd_start() {
	dir=$1
	mkdir -p "$dir"
	dir="$(cd "$dir" && pwd)"
	if stack_running "$dir"; then
		die "$dir already has a running stack (pids in $dir/pids); stop it first: hack/cluster.sh stop $dir"
	fi
	local t0
	t0="$(now)"

	# The mpi-operator release: its tools group (module and CRD) and binary.
	local mpi_group mpi_bin mpi_flags=()
	case ${VODA_MPI_OPERATOR:-v0.6.0} in
	v0.6.0) mpi_group=mpi mpi_bin=mpi-operator ;;
	v0.8.0)
		mpi_group=mpi-v0.8 mpi_bin=mpi-operator-v0.8
		# v0.7.0 added a rate limit of its event queue, 10/s by default.
		mpi_flags=(-controller-queue-rate-limit 300 -controller-queue-burst 600)
		;;
	*) die "VODA_MPI_OPERATOR=$VODA_MPI_OPERATOR: want v0.6.0 or v0.8.0" ;;
	esac

	mkdir -p "$tools"
	local groups
	for groups in "" "$mpi_group"; do
		[[ $groups == mpi ]] && continue # a default group
		# shellcheck disable=SC2086 # "" is the default groups
		if command -v flock >/dev/null; then
			flock "$tools/.build.lock" "$root/hack/tools.sh" $groups
		else
			"$root/hack/tools.sh" $groups
		fi
	done
	local t_tools
	t_tools="$(now)"

	local b
	for b in etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok "$mpi_bin" training-operator; do
		[[ -x $bin/$b ]] || die "missing $bin/$b (hack/tools.sh did not build it)"
	done
	command -v curl >/dev/null || die "curl is needed to probe the components"
	command -v openssl >/dev/null || die "openssl is needed to make the stack's certificates"

	rm -rf "$dir/etcd" "$dir/pki" "$dir/logs" "$dir/pids" "$dir/tmp" "$dir/run" "$dir/kubeconfig" "$dir/env"
	mkdir -p "$dir/logs" "$dir/pids" "$dir/pki" "$dir/tmp" "$dir/run" "$dir/etcd"
	chmod 700 "$dir/etcd" "$dir/pki"

	started=0
	trap 'if [[ $started == 0 ]]; then cmd_stop "$dir"; fi' EXIT

	local etcd_port etcd_peer_port api_port kcm_port sched_port kwok_port to_metrics_port to_health_port to_webhook_port
	pick_ports etcd_port etcd_peer_port api_port kcm_port sched_port kwok_port \
		to_metrics_port to_health_port to_webhook_port

	gen_pki "$dir/pki"
	local token
	token="$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
	{
		echo "$token,admin,admin,system:masters"
		# Users with no permission until a test binds them a role, for
		# tests of Voda's Kubernetes authentication (kubetest.UserToken).
		echo "$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n'),alice,alice,developers"
		echo "$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n'),bob,bob,developers"
		echo "$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n'),carol,carol,operators"
	} >"$dir/pki/tokens.csv"
	chmod 600 "$dir/pki/tokens.csv"
	local kubeconfig=$dir/kubeconfig
	cat >"$kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: voda-test
  cluster:
    server: https://127.0.0.1:$api_port
    certificate-authority-data: $(b64 "$dir/pki/ca.crt")
users:
- name: admin
  user:
    token: $token
contexts:
- name: voda-test
  context:
    cluster: voda-test
    user: admin
current-context: voda-test
EOF
	chmod 600 "$kubeconfig"
	cat >"$dir/env" <<EOF
KUBECONFIG=$kubeconfig
APISERVER=https://127.0.0.1:$api_port
ETCD=http://127.0.0.1:$etcd_port
ETCD_PEER_PORT=$etcd_peer_port
KUBE_CONTROLLER_MANAGER=https://127.0.0.1:$kcm_port
KUBE_SCHEDULER=https://127.0.0.1:$sched_port
KWOK=http://127.0.0.1:$kwok_port
TRAINING_OPERATOR_METRICS=http://127.0.0.1:$to_metrics_port
TRAINING_OPERATOR_HEALTH=http://127.0.0.1:$to_health_port
TRAINING_OPERATOR_WEBHOOK_PORT=$to_webhook_port
EOF

	# etcd
	launch etcd -- "$bin/etcd" --name default --data-dir "$dir/etcd" \
		--listen-client-urls "http://127.0.0.1:$etcd_port" \
		--advertise-client-urls "http://127.0.0.1:$etcd_port" \
		--listen-peer-urls "http://127.0.0.1:$etcd_peer_port" \
		--initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer_port" \
		--initial-cluster "default=http://127.0.0.1:$etcd_peer_port" \
		--unsafe-no-fsync --log-level warn
	wait_for etcd "/health" http_ok "http://127.0.0.1:$etcd_port/health"

	# kube-apiserver
	launch kube-apiserver -- "$bin/kube-apiserver" \
		--etcd-servers "http://127.0.0.1:$etcd_port" \
		--bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$api_port" \
		--cert-dir "$dir/pki" \
		--tls-cert-file "$dir/pki/apiserver.crt" --tls-private-key-file "$dir/pki/apiserver.key" \
		--token-auth-file "$dir/pki/tokens.csv" \
		--authorization-mode RBAC \
		--service-account-issuer https://kubernetes.default.svc.cluster.local \
		--service-account-key-file "$dir/pki/sa.pub" \
		--service-account-signing-key-file "$dir/pki/sa.key" \
		--service-cluster-ip-range 10.96.0.0/16 \
		--endpoint-reconciler-type none \
		--profiling=false
	wait_for kube-apiserver "/readyz" http_ok --cacert "$dir/pki/ca.crt" \
		-H "Authorization: Bearer $token" "https://127.0.0.1:$api_port/readyz"

	# Controllers that only need the apiserver; they start while the CRDs
	# and bootstrap objects go in. Client rate limits are raised (as for the
	# operators below) so that a burst of hundreds of jobs is not throttled
	# by client-go's defaults of 5 to 50 requests a second. The endpoints
	# controllers are off: kwok's pod IPs are loopback addresses, which
	# Endpoints reject, and their retries only load the apiserver.
	launch kube-controller-manager -- "$bin/kube-controller-manager" \
		--kubeconfig "$kubeconfig" \
		--authentication-kubeconfig "$kubeconfig" --authorization-kubeconfig "$kubeconfig" \
		--bind-address 127.0.0.1 --secure-port "$kcm_port" --cert-dir "$dir/pki/kcm" \
		--leader-elect=false \
		--root-ca-file "$dir/pki/ca.crt" \
		--service-account-private-key-file "$dir/pki/sa.key" \
		--service-cluster-ip-range 10.96.0.0/16 \
		--kube-api-qps 200 --kube-api-burst 400 --concurrent-job-syncs 20 \
		--controllers '*,-endpoints-controller,-endpointslice-controller,-endpointslice-mirroring-controller' \
		--profiling=false
	launch kube-scheduler -- "$bin/kube-scheduler" \
		--kubeconfig "$kubeconfig" \
		--authentication-kubeconfig "$kubeconfig" --authorization-kubeconfig "$kubeconfig" \
		--bind-address 127.0.0.1 --secure-port "$sched_port" --cert-dir "$dir/pki/scheduler" \
		--kube-api-qps 200 --kube-api-burst 400 \
		--leader-elect=false --profiling=false
	# kwok also plays the nodes' kubelet for pods/log: the nodes' address is
	# 127.0.0.1 and their kubelet port kwok's, which serves HTTPS (a test
	# certificate; kube-apiserver has no --kubelet-certificate-authority and
	# so does not verify it) and plain HTTP on the one port. Every pod's log
	# is the file pod.log below, in the CRI log format (see Env.PodLogFile).
	mkdir -p "$dir/kwok"
	: >"$dir/kwok/pod.log"
	cat >"$dir/kwok/logs.yaml" <<EOF
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterLogs
metadata:
  name: every-pod
spec:
  logs:
  - logsFile: $dir/kwok/pod.log
    follow: false
EOF
	launch kwok -- "$bin/kwok" \
		--kubeconfig "$kubeconfig" \
		--manage-nodes-with-annotation-selector kwok.x-k8s.io/node=fake \
		--node-ip 127.0.0.1 --node-port "$kwok_port" --cidr 127.62.0.0/16 \
		--server-address "127.0.0.1:$kwok_port" \
		--config "$root/hack/kwok/stages.yaml" --config "$dir/kwok/logs.yaml"

	# CRDs (from the module cache, where hack/tools.sh's build put them) and
	# the objects the operators expect.
	local mpi_dir training_dir
	mpi_dir="$(cd "$root/hack/tools/$mpi_group" && go list -m -f '{{.Dir}}' github.com/kubeflow/mpi-operator)"
	training_dir="$(cd "$root/hack/tools/training" && go list -m -f '{{.Dir}}' github.com/kubeflow/training-operator)"
	local mpi_crd=$mpi_dir/manifests/base/kubeflow.org_mpijobs.yaml
	local pytorch_crd=$training_dir/manifests/base/crds/kubeflow.org_pytorchjobs.yaml
	[[ -f $mpi_crd ]] || die "mpi-operator CRD not found at $mpi_crd"
	[[ -f $pytorch_crd ]] || die "training-operator PyTorchJob CRD not found at $pytorch_crd"
	local kubectl=("$bin/kubectl" --kubeconfig "$kubeconfig")
	if ! bootstrap_objects | "${kubectl[@]}" create -f "$mpi_crd" -f "$pytorch_crd" -f - >"$dir/logs/bootstrap.log" 2>&1; then
		fail bootstrap "creating CRDs and bootstrap objects failed"
	fi
	if ! "${kubectl[@]}" wait --for condition=Established --timeout "${timeout}s" \
		crd/mpijobs.kubeflow.org crd/pytorchjobs.kubeflow.org >>"$dir/logs/bootstrap.log" 2>&1; then
		fail bootstrap "CRDs mpijobs.kubeflow.org/pytorchjobs.kubeflow.org not Established"
	fi

	# mpi-operator
	local netns
	netns="$(netns_mode)"
	if [[ -n $netns ]]; then
		launch mpi-operator-bridge -- bash -c 'cd "$1" && exec socat UNIX-LISTEN:api.sock,fork,unlink-early,mode=600 "TCP:127.0.0.1:$2"' \
			_ "$dir/run" "$api_port"
		wait_for mpi-operator-bridge "its socket" test -S "$dir/run/api.sock"
		# shellcheck disable=SC2086
		launch mpi-operator KUBECONFIG="$kubeconfig" -- unshare $netns -- bash "$script" __netns-exec "$dir/run" "$api_port" -- \
			"$bin/$mpi_bin" -kubeConfig "$kubeconfig" -monitoring-port 0 \
			-kube-api-qps 300 -kube-api-burst 600 -threadiness 8 "${mpi_flags[@]}"
	else
		if (: <"/dev/tcp/127.0.0.1/8080") 2>/dev/null || { command -v ss >/dev/null && ss -Hltn 'sport = :8080' | grep -q .; }; then
			die "mpi-operator: port 8080 is in use, and mpi-operator v0.6.0 always serves its health check on :8080 (hard-coded, no flag); without a network namespace of its own (needs unshare, ip and socat; VODA_CLUSTER_NETNS=${VODA_CLUSTER_NETNS:-auto}) only one stack per machine can run"
		fi
		launch mpi-operator KUBECONFIG="$kubeconfig" -- "$bin/$mpi_bin" -kubeConfig "$kubeconfig" -monitoring-port 0 \
			-kube-api-qps 300 -kube-api-burst 600 -threadiness 8 "${mpi_flags[@]}"
	fi

	# training-operator
	local certdir=$dir/tmp/k8s-webhook-server/serving-certs
	mkdir -p "$certdir"
	cp "$dir/pki/webhook.crt" "$certdir/tls.crt"
	cp "$dir/pki/webhook.key" "$certdir/tls.key"
	cp "$dir/pki/webhook-ca.crt" "$certdir/ca.crt"
	local shared=/tmp/k8s-webhook-server/serving-certs
	if [[ ! -e $shared/tls.crt ]]; then
		mkdir -p "$shared" 2>/dev/null || true
		local tmpcrt
		tmpcrt="$(mktemp "$shared/.tls.crt.XXXXXX" 2>/dev/null)" ||
			die "training-operator: cannot create $shared/tls.crt, which its cert rotator waits for (hard-coded path)"
		cp "$dir/pki/webhook.crt" "$tmpcrt"
		chmod 644 "$tmpcrt"
		mv -f "$tmpcrt" "$shared/tls.crt"
	fi
	launch training-operator KUBECONFIG="$kubeconfig" TMPDIR="$dir/tmp" -- "$bin/training-operator" \
		--enable-scheme pytorchjob \
		--metrics-bind-address "127.0.0.1:$to_metrics_port" \
		--health-probe-bind-address "127.0.0.1:$to_health_port" \
		--webhook-server-port "$to_webhook_port" \
		--leader-elect=false

	if [[ -n ${VODA_CLUSTER_OWNER_PID:-} ]]; then
		local owner_start
		owner_start="$(proc_start "$VODA_CLUSTER_OWNER_PID")" || die "VODA_CLUSTER_OWNER_PID=$VODA_CLUSTER_OWNER_PID is not a running process"
		launch reaper -- bash "$script" __reaper "$dir" "$VODA_CLUSTER_OWNER_PID" "$owner_start"
	fi

	# Readiness of the rest.
	wait_for kube-controller-manager "/healthz" http_ok -k "https://127.0.0.1:$kcm_port/healthz"
	wait_for kube-controller-manager "ServiceAccount default/default" \
		"${kubectl[@]}" get serviceaccount default --namespace default
	wait_for kube-scheduler "/readyz" http_ok -k "https://127.0.0.1:$sched_port/readyz"
	wait_for kwok "/healthz" http_ok "http://127.0.0.1:$kwok_port/healthz"
	wait_for mpi-operator "\"Started workers\" in its log" grep -q "Started workers" "$dir/logs/mpi-operator.log"
	wait_for training-operator "/readyz" http_ok "http://127.0.0.1:$to_health_port/readyz"

	started=1
	local t1
	t1="$(now)"
	log "stack up in $(awk -v a="$t0" -v b="$t1" -v c="$t_tools" 'BEGIN { printf "%.1f s (components %.1f s)", b - a, b - c }'), $dir${netns:+ (mpi-operator in its own network namespace)}"
	echo "$kubeconfig"
}

# cmd_reaper DIR PID START: stops the stack of DIR once process PID (with
# start time START) is gone.
cmd_reaper() {
	local dir=$1 pid=$2 start=$3
	while [[ $(proc_start "$pid" 2>/dev/null) == "$start" ]]; do
		sleep 1
	done
	rm -f "$dir/pids/reaper.pid"
	exec bash "$script" stop "$dir"
}

usage() {
	sed -n '2,/^set -euo/p' "$script" | sed '$d' | sed 's/^# \{0,1\}//' >&2
	exit 2
}

case "${1:-}" in
start)
	[[ $# == 2 ]] || usage
	cmd_start "$2"
	;;
stop)
	[[ $# == 2 ]] || usage
	cmd_stop "$2"
	;;
__netns-exec)
	shift
	cmd_netns_exec "$@"
	;;
__reaper)
	shift
	cmd_reaper "$@"
	;;
*)
	usage
	;;
esac
