{{/* The chart's name. */}}
{{- define "voda.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The prefix of every object's name: the release's name, with the
chart's appended unless it contains it ("voda" stays "voda"). */}}
{{- define "voda.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Labels of every object. plainManifests leaves out what says Helm
manages it. */}}
{{- define "voda.labels" -}}
{{- if not .Values.plainManifests -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{ end -}}
{{ include "voda.selectorLabels" . }}
{{- end }}

{{- define "voda.selectorLabels" -}}
app.kubernetes.io/name: {{ include "voda.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The ServiceAccount of every pod, named in the RBAC bindings. */}}
{{- define "voda.serviceAccountName" -}}
{{- default (printf "%s-scheduler" (include "voda.fullname" .)) .Values.serviceAccount.name }}
{{- end }}

{{/* The ServiceAccount of the API's pods: with components split a
separate one, <fullname>-api, that is granted nothing but the reviews of
authentication kubernetes; else the scheduler's. */}}
{{- define "voda.apiServiceAccountName" -}}
{{- if and (eq .Values.components "split") .Values.serviceAccount.create }}
{{- printf "%s-api" (include "voda.fullname" .) }}
{{- else }}
{{- include "voda.serviceAccountName" . }}
{{- end }}
{{- end }}

{{/* The prefix of the RBAC objects' names: <fullname>-scheduler, as in
deploy/rbac.yaml. */}}
{{- define "voda.rbacName" -}}
{{- printf "%s-scheduler" (include "voda.fullname" .) }}
{{- end }}

{{/* The container's image: repository@digest, else repository:tag.
voda.validate makes sure one of them is set: there is no default. */}}
{{- define "voda.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository .Values.image.tag }}
{{- end }}
{{- end }}

{{/* voda.validateImage fails the rendering unless the values name an
image the user has built and pushed: no Voda image is published, so a
default would only end in ImagePullBackOff. The message says how to build
one and which values to set. */}}
{{- define "voda.validateImage" -}}
{{- $image := .Values.image }}
{{- $tag := .Chart.AppVersion }}
{{- $howTo := printf "build it with `make image` (an OCI layout in bin/image/layout and a docker tarball bin/image/voda.tar; see docs/kubernetes.md#the-image), push it to a registry your nodes pull from (e.g. `crane push bin/image/layout registry.example.com/voda:%s`), then set image.repository=registry.example.com/voda and image.tag=%s, or image.digest=sha256:... (the digest make image prints)" $tag $tag }}
{{- if not $image.repository }}
{{- fail (printf "image.repository is not set: no Voda image is published, so the chart has no default; %s" $howTo) }}
{{- end }}
{{- if or (contains "@" $image.repository) (contains ":" (splitList "/" $image.repository | last)) }}
{{- fail (printf "image.repository %s holds a tag or digest: give the repository alone (e.g. registry.example.com/voda), the tag in image.tag and the digest in image.digest" $image.repository) }}
{{- end }}
{{- if and (not $image.tag) (not $image.digest) }}
{{- fail (printf "image.repository %s needs image.tag or image.digest: the chart has no default tag, since no Voda image is published; set the tag you pushed (make image names the image after `git describe --tags --always --dirty`: %s on the commit tagged %s, the short commit hash elsewhere) or image.digest=sha256:... as make image prints it (docs/kubernetes.md#the-image)" $image.repository $tag $tag) }}
{{- end }}
{{- end }}

{{/* The namespace of jobs naming none. */}}
{{- define "voda.defaultJobNamespace" -}}
{{- default (first .Values.jobNamespaces) .Values.defaultJobNamespace }}
{{- end }}

{{- define "voda.scheme" -}}
{{- if .Values.tls.enabled }}https{{ else }}http{{ end }}
{{- end }}

{{/* --progress-url: the value, else the chart's Service. */}}
{{- define "voda.progressURL" -}}
{{- if eq .Values.progressURL "-" }}
{{- else if .Values.progressURL }}
{{- .Values.progressURL }}
{{- else }}
{{- $svc := include "voda.fullname" . }}
{{- if eq .Values.components "split" }}{{ $svc = printf "%s-api" $svc }}{{ end }}
{{- printf "%s://%s.%s.svc:%v" (include "voda.scheme" .) $svc .Release.Namespace .Values.service.port }}
{{- end }}
{{- end }}

{{/* The Deployments to render: a list of {name suffix, --components,
replicas}. */}}
{{- define "voda.deployments" -}}
{{- if eq .Values.components "split" }}
- {suffix: "-api", components: api, replicas: {{ .Values.api.replicas }}, api: true, scheduler: false}
- {suffix: "-scheduler", components: scheduler, replicas: {{ .Values.scheduler.replicas }}, api: false, scheduler: true}
{{- else }}
- {suffix: "", components: all, replicas: {{ .Values.replicas }}, api: true, scheduler: true}
{{- end }}
{{- end }}

{{/* voda.validate fails the rendering on values that cannot work, with a
message that says why and what to set instead. Every template includes
it, so `helm template --show-only` refuses them too. */}}
{{- define "voda.validate" -}}
{{- include "voda.validateImage" . }}
{{- $v := .Values }}
{{- $split := eq $v.components "split" }}
{{- $processes := ternary (add $v.api.replicas $v.scheduler.replicas) $v.replicas $split }}
{{- if not (has $v.components (list "all" "split")) }}
{{- fail (printf "components: %q is not all or split" $v.components) }}
{{- end }}
{{- if and (eq $v.store.type "embedded") (or $split (gt (int $v.replicas) 1)) }}
{{- fail (printf "store.type embedded keeps the state in a file one process owns: it needs components all and replicas 1 (got components %s, replicas %v); for more replicas set store.type mongodb and queue.type rabbitmq" $v.components $processes) }}
{{- end }}
{{- if and (eq $v.queue.type "memory") (or $split (gt (int $v.replicas) 1)) }}
{{- fail (printf "queue.type memory reaches only its own process: with components %s and %v pods the schedulers would not hear the API; set queue.type rabbitmq (and queue.rabbitmq.existingSecret)" $v.components $processes) }}
{{- end }}
{{- if and (eq $v.store.type "mongodb") (not $v.store.mongodb.existingSecret) }}
{{- fail "store.type mongodb needs store.mongodb.existingSecret: the name of a Secret whose key store.mongodb.key (default uri) holds the mongodb:// URI" }}
{{- end }}
{{- if and (eq $v.queue.type "rabbitmq") (not $v.queue.rabbitmq.existingSecret) }}
{{- fail "queue.type rabbitmq needs queue.rabbitmq.existingSecret: the name of a Secret whose key queue.rabbitmq.key (default url) holds the amqp:// URL" }}
{{- end }}
{{- if and $split (not $v.scheduler.gpuTypes) }}
{{- fail "components split needs scheduler.gpuTypes: the API alone does not read the nodes, so it must be told the GPU types it accepts" }}
{{- end }}
{{- $schedulers := ternary $v.scheduler.replicas $v.replicas $split }}
{{- if and (not $v.scheduler.leaderElection.enabled) (gt (int $schedulers) 1) }}
{{- fail (printf "scheduler.leaderElection.enabled false with %v scheduler pods: each would schedule every GPU type on its own; keep leader election on, or run one scheduler pod" $schedulers) }}
{{- end }}
{{- if and (eq $v.authentication.mode "token-file") (not $v.authentication.tokenFile.existingSecret) }}
{{- fail "authentication.mode token-file needs authentication.tokenFile.existingSecret: the name of a Secret whose key authentication.tokenFile.key (default tokens.csv) holds the token file" }}
{{- end }}
{{- if and (eq $v.authentication.mode "none") (not $v.authentication.insecureAllowAnonymous) }}
{{- fail "authentication.mode none lets anyone who reaches the Service delete any job and change the algorithm; set authentication.insecureAllowAnonymous true to accept that, or use kubernetes or token-file" }}
{{- end }}
{{- if and $v.tls.enabled (not $v.tls.secretName) }}
{{- fail "tls.enabled needs tls.secretName: a Secret of type kubernetes.io/tls (keys tls.crt and tls.key)" }}
{{- end }}
{{- if not $v.jobNamespaces }}
{{- fail "jobNamespaces: at least one namespace where jobs run is needed" }}
{{- end }}
{{- if and $v.defaultJobNamespace (not (has $v.defaultJobNamespace $v.jobNamespaces)) }}
{{- fail (printf "defaultJobNamespace %s must be one of jobNamespaces (%s): jobs naming no namespace run there" $v.defaultJobNamespace (join ", " $v.jobNamespaces)) }}
{{- end }}
{{- if and $v.podDisruptionBudget.enabled (not (kindIs "invalid" $v.podDisruptionBudget.maxUnavailable)) (not (kindIs "invalid" $v.podDisruptionBudget.minAvailable)) }}
{{- fail "podDisruptionBudget: give maxUnavailable or minAvailable, not both (set the other to null)" }}
{{- end }}
{{- if and (not $v.serviceAccount.create) (not $v.serviceAccount.name) }}
{{- fail "serviceAccount.create false needs serviceAccount.name: the existing ServiceAccount the pods run as" }}
{{- end }}
{{- if eq (int $v.api.probePort) (int $v.api.port) }}
{{- fail (printf "api.probePort %v is api.port: give the probes a port of their own, or 0 for none (probes then go to the API's port)" $v.api.probePort) }}
{{- end }}
{{- end }}
