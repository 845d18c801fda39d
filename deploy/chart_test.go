package deploy

import (
	"maps"
	"net"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// valueSet is one rendering the tests check, with what it must render.
type valueSet struct {
	name string
	// file is a values file under the chart ("": the defaults).
	file string
	// pool is the InferencePool the router follows ("": it discovers pods by label selector);
	// createPool says the chart renders it.
	pool       string
	createPool bool
	route      bool
	// claim is the models volume's PersistentVolumeClaim ("": an emptyDir); share the share
	// volume's ("": none, each replica learns alone).
	claim, share string
	// secret and secretKey hold the admin token; generated says the chart renders the Secret.
	secret, secretKey string
	generated         bool
	// readSecret and readSecretKey hold the read-only token ("": none).
	readSecret, readSecretKey string
	// probe is the probes' kind: grpc or http.
	probe string
	// modelLabels are the model servers' labels, which discovery or the created pool selects.
	modelLabels map[string]string
	// nats is the state plane's NATS URL in the config ("": no state section), prefix its subject
	// prefix; natsDeployed says the chart runs that NATS.
	nats, prefix string
	natsDeployed bool
	// kvEventsPort is endpoints.kubernetes.kvEventsPort in the config (nil: none).
	kvEventsPort any
}

// valueSets are the defaults and every file of helm/foresight/ci, which make helm-check lints.
var valueSets = []valueSet{
	{name: "defaults", secret: "foresight-admin-token", secretKey: "token", generated: true, probe: "grpc",
		modelLabels: map[string]string{"app": "vllm-llama3-8b-instruct"}},
	{name: "inferencepool", file: "ci/inferencepool-values.yaml", pool: "foresight", createPool: true,
		secret: "foresight-admin-token", secretKey: "token", generated: true, probe: "grpc",
		modelLabels: map[string]string{"app": "vllm-llama3-8b-instruct", "tier": "gpu"}},
	{name: "httproute", file: "ci/httproute-values.yaml", pool: "vllm-llama3-8b-instruct", route: true,
		secret: "foresight-admin-token", secretKey: "token", generated: true, probe: "grpc", kvEventsPort: 5557},
	{name: "pvc", file: "ci/pvc-values.yaml", share: "foresight-share", secret: "router-admin", secretKey: "bearer", probe: "http",
		readSecret: "router-metrics", readSecretKey: "bearer", modelLabels: map[string]string{"app": "vllm-llama3-8b-instruct"}},
	{name: "nats", file: "ci/nats-values.yaml", secret: "foresight-admin-token", secretKey: "token", generated: true, probe: "grpc",
		modelLabels: map[string]string{"app": "vllm-llama3-8b-instruct"}, nats: "nats://foresight-nats.foresight.svc:4222",
		prefix: "pool-a", natsDeployed: true},
}

// TestValueSetsCoverCI fails when a values file under ci/ is not among the tests' value sets.
func TestValueSetsCoverCI(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(chartDir, "ci", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, vs := range valueSets {
		if vs.file != "" {
			want = append(want, filepath.Join(chartDir, vs.file))
		}
	}
	slices.Sort(files)
	slices.Sort(want)
	if !slices.Equal(files, want) {
		t.Errorf("values files under %s/ci: %q; the tests' value sets: %q (add the new file to valueSets)", chartDir, files, want)
	}
}

// TestChart renders the chart with each value set, decodes every object strictly into its API
// type, checks the objects against each other, and runs `foresight check` on the ConfigMap's
// config with the binaries where the image puts them.
func TestChart(t *testing.T) {
	img := readDockerfile(t)
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			var args []string
			if vs.file != "" {
				args = append(args, "--values", filepath.Join(chartDir, vs.file))
			}
			r := decodeRendering(t, render(t, args...))
			checkObjects(t, r, vs)
			checkNATS(t, r, vs)
			cfg := checkConfig(t, r, vs, img)
			paths := map[string]string{img.binDir: imageBinaries(t)}
			c := r.deployment.Spec.Template.Spec.Containers[0]
			for _, m := range c.VolumeMounts {
				if !m.ReadOnly {
					paths[m.MountPath] = t.TempDir()
				}
			}
			// The downward API's values, as a pod of the Deployment has them (POD_NAME names a
			// replica sharing what it learns).
			var env []string
			for _, e := range c.Env {
				if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
					env = append(env, e.Name+"="+r.deployment.Name+"-0")
				}
			}
			if out, err := foresightCheck(t, cfg, paths, env); err != nil {
				t.Errorf("foresight check refuses the ConfigMap's config: %v\n%s\nthe config:\n%s", err, out, cfg)
			}
		})
	}
}

// TestChartVersion: the chart's version and appVersion are the repository's VERSION.
func TestChartVersion(t *testing.T) {
	v, err := os.ReadFile("../VERSION")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(chartDir, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var chart struct {
		Version    string `yaml:"version"`
		AppVersion string `yaml:"appVersion"`
	}
	if err := yaml.Unmarshal(data, &chart); err != nil {
		t.Fatal(err)
	}
	want := strings.TrimSpace(string(v))
	if chart.Version != want || chart.AppVersion != want {
		t.Errorf("Chart.yaml version %q, appVersion %q: want VERSION's %q for both", chart.Version, chart.AppVersion, want)
	}
}

// TestChartRefusals: values the chart cannot render fail with a message naming the value.
func TestChartRefusals(t *testing.T) {
	for name, c := range map[string]struct {
		args []string
		want string
	}{
		"a pool over a named port": {[]string{"--set", "inferencePool.create=true,modelServers.targetPort=http"},
			`modelServers.targetPort: an InferencePool lists port numbers; got the name "http"`},
		"a route without a pool": {[]string{"--set", "httpRoute.enabled=true"},
			"httpRoute.enabled: the route sends traffic to an InferencePool"},
		"an unknown failure mode": {[]string{"--set", "inferencePool.create=true,inferencePool.failureMode=Retry"},
			`inferencePool.failureMode: FailOpen or FailClose; got "Retry"`},
		"an unknown probe kind": {[]string{"--set", "probes.type=exec"}, `probes.type: grpc or http; got "exec"`},
		"discovery set by hand": {[]string{"--set", "config.endpoints.kubernetes.inferencePool=x"},
			"config.endpoints.kubernetes: the chart sets it from modelServers and inferencePool"},
		"no model server labels": {[]string{"--set", "modelServers.matchLabels=null"},
			"modelServers.matchLabels: the labels of the model server pods the router discovers; got none"},
		"a misspelt value (values.schema.json)": {[]string{"--set", "inferncePool.create=true"},
			"additional properties 'inferncePool' not allowed"},
		"a port out of range (values.schema.json)": {[]string{"--set", "ports.extProc=70000"}, "/ports/extProc"},
		"one models claim for several replicas": {[]string{"--set", "replicaCount=2,models.existingClaim=m"},
			"models.existingClaim: one claim for 2 replicas would have them all write one modelDir"},
		"a NATS given and run": {[]string{"--set", "nats.enabled=true,state.natsURL=nats://n:4222"},
			"state.natsURL and nats.enabled: give the address of your NATS or let the chart run one, not both"},
		"a share volume beside NATS": {[]string{"--set", "state.natsURL=nats://n:4222,share.existingClaim=s"},
			"share.existingClaim: the replicas share their samples through the state plane's NATS"},
		"a NATS URL that is not one (values.schema.json)": {[]string{"--set", "state.natsURL=http://n:4222"}, "/state/natsURL"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := helmTemplate(c.args...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("helm template %s: err %v; want a failure saying %q", strings.Join(c.args, " "), err, c.want)
			}
		})
	}
}

// decodeRendering decodes a rendering, failing the test on any document that does not decode.
func decodeRendering(t *testing.T, data []byte) *rendered {
	t.Helper()
	r, err := decodeAll(data)
	if err != nil {
		t.Fatalf("decoding the rendered objects: %v", err)
	}
	for what, missing := range map[string]bool{
		"Deployment": r.deployment == nil, "Service": r.service == nil, "ConfigMap": r.configMap == nil,
		"PodDisruptionBudget": r.pdb == nil, "Role": r.role == nil, "RoleBinding": r.roleBinding == nil,
		"ServiceAccount": r.serviceAccount == nil,
	} {
		if missing {
			t.Fatalf("no %s rendered", what)
		}
	}
	if n := len(r.deployment.Spec.Template.Spec.Containers); n != 1 {
		t.Fatalf("the Deployment's pod has %d containers, want 1 (the router; its plugins are its processes)", n)
	}
	return r
}

// checkObjects checks the rendered objects against each other and against the value set.
func checkObjects(t *testing.T, r *rendered, vs valueSet) {
	t.Helper()
	for obj, ns := range r.objects {
		if ns != namespace {
			t.Errorf("%s: namespace %q, want the release's %q", obj, ns, namespace)
		}
	}
	pod := r.deployment.Spec.Template
	c := pod.Spec.Containers[0]
	podLabels := labels.Set(pod.Labels)

	// Selectors: the Deployment's, the Service's and the PodDisruptionBudget's select the pods.
	for what, sel := range map[string]*metav1.LabelSelector{
		"Deployment spec.selector": r.deployment.Spec.Selector, "PodDisruptionBudget spec.selector": r.pdb.Spec.Selector,
	} {
		s, err := metav1.LabelSelectorAsSelector(sel)
		if err != nil || s.Empty() || !s.Matches(podLabels) {
			t.Errorf("%s %v does not select the pod template's labels %v (%v)", what, sel, pod.Labels, err)
		}
	}
	if len(r.service.Spec.Selector) == 0 || !labels.SelectorFromSet(r.service.Spec.Selector).Matches(podLabels) {
		t.Errorf("Service selector %v does not select the pod template's labels %v", r.service.Spec.Selector, pod.Labels)
	}

	// Ports: each Service port targets a container port by name, with the same number.
	containerPorts := map[string]int32{}
	for _, p := range c.Ports {
		containerPorts[p.Name] = p.ContainerPort
	}
	servicePorts := map[string]corev1.ServicePort{}
	for _, p := range r.service.Spec.Ports {
		servicePorts[p.Name] = p
		n, ok := containerPorts[p.TargetPort.String()]
		if !ok || n != p.Port {
			t.Errorf("Service port %s (%d) targets %q: want a container port of that name and number (container ports %v)", p.Name, p.Port, p.TargetPort.String(), containerPorts)
		}
	}
	for _, name := range []string{"ext-proc", "http", "admin"} {
		if _, ok := servicePorts[name]; !ok {
			t.Errorf("Service has no port %q", name)
		}
	}
	if a := servicePorts["ext-proc"].AppProtocol; a == nil || *a != "kubernetes.io/h2c" {
		t.Errorf("Service port ext-proc appProtocol %v: want kubernetes.io/h2c (gRPC without TLS)", a)
	}
	if got, want := hostPort(t, "--ext-proc", flagValue(c.Args, "--ext-proc")), containerPorts["ext-proc"]; got != want {
		t.Errorf("serve --ext-proc listens on %d, the container port ext-proc is %d", got, want)
	}

	// Probes: on ports the container has; the gRPC ones ask the health service of their kind.
	for kind, p := range map[string]*corev1.Probe{"startup": c.StartupProbe, "readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
		switch {
		case p == nil:
			t.Errorf("no %s probe", kind)
		case vs.probe == "grpc" && p.GRPC != nil:
			wantService := map[string]string{"startup": "liveness", "readiness": "readiness", "liveness": "liveness"}[kind]
			if p.GRPC.Port != containerPorts["ext-proc"] || p.GRPC.Service == nil || *p.GRPC.Service != wantService {
				t.Errorf("%s probe grpc %+v: want port %d (ext-proc) and service %q", kind, p.GRPC, containerPorts["ext-proc"], wantService)
			}
		case vs.probe == "http" && p.HTTPGet != nil:
			if _, ok := containerPorts[p.HTTPGet.Port.String()]; !ok || p.HTTPGet.Path != "/health" || p.HTTPGet.Port.String() != "admin" {
				t.Errorf("%s probe httpGet %s on port %q: want /health on the container port admin", kind, p.HTTPGet.Path, p.HTTPGet.Port.String())
			}
		default:
			t.Errorf("%s probe %+v: want a %s probe", kind, p.ProbeHandler, vs.probe)
		}
	}

	// RBAC: the RoleBinding grants the Role to the service account the pods run as, and the Role
	// reads what discovery reads and nothing more.
	sa := pod.Spec.ServiceAccountName
	if r.serviceAccount.Name != sa {
		t.Errorf("the pods run as service account %q, the chart creates %q", sa, r.serviceAccount.Name)
	}
	rb := r.roleBinding
	if rb.RoleRef != (rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: r.role.Name}) {
		t.Errorf("RoleBinding roleRef %+v: want the Role %q", rb.RoleRef, r.role.Name)
	}
	if want := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: namespace}}; !slices.Equal(rb.Subjects, want) {
		t.Errorf("RoleBinding subjects %+v: want %+v", rb.Subjects, want)
	}
	read := []string{"get", "list", "watch"}
	wantRules := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: read}}
	if vs.pool != "" {
		wantRules = append(wantRules, rbacv1.PolicyRule{APIGroups: []string{inferenceGroup}, Resources: []string{"inferencepools"}, Verbs: read},
			// The pool's objectives and model rewrites, read when their CRDs are installed.
			rbacv1.PolicyRule{APIGroups: []string{"inference.networking.x-k8s.io"}, Resources: []string{"inferenceobjectives", "inferencemodelrewrites"}, Verbs: read})
	}
	if !equalRules(r.role.Rules, wantRules) {
		t.Errorf("Role rules %+v: want exactly %+v", r.role.Rules, wantRules)
	}

	// The admin token: from the Secret the chart renders, or the operator's; the read-only
	// token from the operator's Secret, when one is named.
	var token, readToken *corev1.SecretKeySelector
	for _, e := range c.Env {
		if e.Name == "FORESIGHT_ADMIN_TOKEN" && e.ValueFrom != nil {
			token = e.ValueFrom.SecretKeyRef
		}
		if e.Name == "FORESIGHT_READ_TOKEN" && e.ValueFrom != nil {
			readToken = e.ValueFrom.SecretKeyRef
		}
	}
	switch {
	case vs.readSecret == "" && readToken != nil:
		t.Errorf("FORESIGHT_READ_TOKEN from Secret %q, though the values name none", readToken.Name)
	case vs.readSecret != "" && (readToken == nil || readToken.Name != vs.readSecret || readToken.Key != vs.readSecretKey):
		t.Errorf("FORESIGHT_READ_TOKEN from %+v: want Secret %q key %q", readToken, vs.readSecret, vs.readSecretKey)
	}
	switch {
	case token == nil:
		t.Errorf("no FORESIGHT_ADMIN_TOKEN from a Secret: the router refuses an exposed admin listener without a token")
	case token.Name != vs.secret || token.Key != vs.secretKey:
		t.Errorf("FORESIGHT_ADMIN_TOKEN from Secret %q key %q: want %q key %q", token.Name, token.Key, vs.secret, vs.secretKey)
	case vs.generated && (r.secret == nil || r.secret.Name != vs.secret || len(r.secret.Data[vs.secretKey]) < 32):
		t.Errorf("want the chart to render Secret %q with a token of 32 bytes or more under %q, got %+v", vs.secret, vs.secretKey, r.secret)
	case !vs.generated && r.secret != nil:
		t.Errorf("the operator's Secret holds the token, yet the chart renders Secret %q", r.secret.Name)
	}

	// Volumes: the config as a directory, a writable /tmp, the models.
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Spec.Volumes {
		volumes[v.Name] = v
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m
		if m.SubPath != "" || m.SubPathExpr != "" {
			t.Errorf("volume mount %s uses a subPath: a ConfigMap mounted so is never updated in the pod", m.Name)
		}
		if _, ok := volumes[m.Name]; !ok {
			t.Errorf("volume mount %s names no volume of the pod", m.Name)
		}
	}
	configFile := flagValue(c.Args, "--config")
	if v := volumes["config"].ConfigMap; v == nil || v.Name != r.configMap.Name || mounts["config"].MountPath != path.Dir(configFile) {
		t.Errorf("serve --config %s: want the ConfigMap %s mounted at %s, got volume %+v at %q", configFile, r.configMap.Name, path.Dir(configFile), volumes["config"], mounts["config"].MountPath)
	}
	if _, ok := r.configMap.Data[path.Base(configFile)]; !ok {
		t.Errorf("ConfigMap %s has no key %s (serve --config %s)", r.configMap.Name, path.Base(configFile), configFile)
	}
	if volumes["tmp"].EmptyDir == nil || mounts["tmp"].MountPath != "/tmp" || mounts["tmp"].ReadOnly {
		t.Errorf("want a writable emptyDir at /tmp for the plugins' sockets, got %+v at %+v", volumes["tmp"], mounts["tmp"])
	}
	models := volumes["models"]
	switch {
	case mounts["models"].ReadOnly:
		t.Errorf("the models volume is mounted read-only: the producer writes its models there")
	case vs.claim == "" && models.EmptyDir == nil:
		t.Errorf("models volume %+v: want an emptyDir", models)
	case vs.claim != "" && (models.PersistentVolumeClaim == nil || models.PersistentVolumeClaim.ClaimName != vs.claim):
		t.Errorf("models volume %+v: want the claim %q", models, vs.claim)
	}
	share, shared := volumes["share"]
	switch {
	case vs.share == "" && shared:
		t.Errorf("a share volume %+v without share.existingClaim", share)
	case vs.share != "" && (!shared || share.PersistentVolumeClaim == nil || share.PersistentVolumeClaim.ClaimName != vs.share):
		t.Errorf("share volume %+v: want the claim %q", share, vs.share)
	case vs.share != "" && mounts["share"].ReadOnly:
		t.Errorf("the share volume is mounted read-only: every replica publishes its samples there")
	}

	// Security: non-root, a read-only root filesystem, no privilege escalation, no capabilities.
	psc, sc := pod.Spec.SecurityContext, c.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
		t.Errorf("pod securityContext %+v: want runAsNonRoot", psc)
	}
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("container securityContext %+v: want readOnlyRootFilesystem, no privilege escalation, every capability dropped", sc)
	}

	// The InferencePool: its endpoint picker is the Service's ext-proc port.
	switch {
	case vs.createPool && r.pool == nil:
		t.Errorf("no InferencePool rendered")
	case !vs.createPool && r.pool != nil:
		t.Errorf("InferencePool %s rendered: want none", r.pool.Name)
	case r.pool != nil:
		ref := r.pool.Spec.EndpointPickerRef
		if r.pool.Name != vs.pool {
			t.Errorf("InferencePool %q: want %q", r.pool.Name, vs.pool)
		}
		if !maps.Equal(r.pool.Spec.Selector.MatchLabels, vs.modelLabels) {
			t.Errorf("InferencePool selector %v: want the model servers' labels %v", r.pool.Spec.Selector.MatchLabels, vs.modelLabels)
		}
		if ref.Kind != "Service" || ref.Name != r.service.Name || ref.Port == nil || ref.Port.Number != servicePorts["ext-proc"].Port {
			t.Errorf("InferencePool endpointPickerRef %+v: want the Service %s, port %d (ext-proc)", ref, r.service.Name, servicePorts["ext-proc"].Port)
		}
	}

	// The HTTPRoute sends the Gateway's requests to the pool the router follows.
	switch {
	case vs.route && r.route == nil:
		t.Errorf("no HTTPRoute rendered")
	case !vs.route && r.route != nil:
		t.Errorf("HTTPRoute %s rendered: want none", r.route.Name)
	case r.route != nil:
		var refs []httpBackendRef
		for _, rule := range r.route.Spec.Rules {
			refs = append(refs, rule.BackendRefs...)
		}
		if len(refs) != 1 || deref(refs[0].Group) != inferenceGroup || deref(refs[0].Kind) != "InferencePool" || refs[0].Name != vs.pool {
			t.Errorf("HTTPRoute backendRefs %+v: want the one InferencePool %q (group %s)", refs, vs.pool, inferenceGroup)
		}
		if len(r.route.Spec.ParentRefs) == 0 || deref(r.route.Spec.ParentRefs[0].Kind) != "Gateway" {
			t.Errorf("HTTPRoute parentRefs %+v: want a Gateway", r.route.Spec.ParentRefs)
		}
	}
}

// routerConfig is the part of the router's config the chart fills in and the objects must agree
// with; foresight check validates the whole file.
type routerConfig struct {
	Plugins []struct {
		Name       string         `yaml:"name"`
		Type       string         `yaml:"type"`
		Path       string         `yaml:"path"`
		Parameters map[string]any `yaml:"parameters"`
	} `yaml:"plugins"`
	Server struct {
		Listen      string `yaml:"listen"`
		AdminListen string `yaml:"adminListen"`
	} `yaml:"server"`
	Endpoints struct {
		Kubernetes *struct {
			Namespace     string            `yaml:"namespace"`
			InferencePool string            `yaml:"inferencePool"`
			Selector      map[string]string `yaml:"selector"`
			TargetPort    any               `yaml:"targetPort"`
			KVEventsPort  any               `yaml:"kvEventsPort"`
		} `yaml:"kubernetes"`
	} `yaml:"endpoints"`
	State *struct {
		NATS struct {
			URL string `yaml:"url"`
		} `yaml:"nats"`
		Prefix string `yaml:"prefix"`
	} `yaml:"state"`
}

// checkConfig checks the ConfigMap's config against the objects and the image, and returns it.
func checkConfig(t *testing.T, r *rendered, vs valueSet, img image) string {
	t.Helper()
	c := r.deployment.Spec.Template.Spec.Containers[0]
	text := r.configMap.Data[path.Base(flagValue(c.Args, "--config"))]
	var cfg routerConfig
	if err := yaml.Unmarshal([]byte(text), &cfg); err != nil {
		t.Fatalf("the ConfigMap's config is not YAML: %v\n%s", err, text)
	}
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if got := hostPort(t, "server.listen", cfg.Server.Listen); got != ports["http"] {
		t.Errorf("server.listen %s: want the container port http, %d", cfg.Server.Listen, ports["http"])
	}
	if got := hostPort(t, "server.adminListen", cfg.Server.AdminListen); got != ports["admin"] {
		t.Errorf("server.adminListen %s: want the container port admin, %d", cfg.Server.AdminListen, ports["admin"])
	}
	k := cfg.Endpoints.Kubernetes
	switch {
	case k == nil:
		t.Errorf("the config has no endpoints.kubernetes: the router would not discover the model servers")
	case k.Namespace != namespace:
		t.Errorf("endpoints.kubernetes.namespace %q: want the release's %q, where the Role grants reads", k.Namespace, namespace)
	case k.InferencePool != vs.pool:
		t.Errorf("endpoints.kubernetes.inferencePool %q: want %q", k.InferencePool, vs.pool)
	case vs.pool == "" && (len(k.Selector) == 0 || k.TargetPort == nil):
		t.Errorf("endpoints.kubernetes %+v: want a selector and a targetPort", *k)
	case vs.pool == "" && !maps.Equal(k.Selector, vs.modelLabels):
		t.Errorf("endpoints.kubernetes.selector %v: want the model servers' labels %v", k.Selector, vs.modelLabels)
	case vs.pool != "" && (k.Selector != nil || k.TargetPort != nil):
		t.Errorf("endpoints.kubernetes %+v: want the pool alone (it names selector and ports)", *k)
	}
	if k != nil && k.KVEventsPort != vs.kvEventsPort {
		t.Errorf("endpoints.kubernetes.kvEventsPort %v: want %v (modelServers.kvEventsPort)", k.KVEventsPort, vs.kvEventsPort)
	}
	switch {
	case vs.nats == "" && cfg.State != nil:
		t.Errorf("a state section %+v without a NATS", *cfg.State)
	case vs.nats != "" && (cfg.State == nil || cfg.State.NATS.URL != vs.nats || cfg.State.Prefix != vs.prefix):
		t.Errorf("state section %+v: want the NATS %s and the prefix %q", cfg.State, vs.nats, vs.prefix)
	}
	var models, share string
	for _, m := range c.VolumeMounts {
		switch m.Name {
		case "models":
			models = m.MountPath
		case "share":
			share = m.MountPath
		}
	}
	for _, p := range cfg.Plugins {
		if p.Path != "" && path.Dir(p.Path) != path.Join(img.binDir, "plugins") {
			t.Errorf("plugin %s: path %s is not in the image's %s/plugins", p.Name, p.Path, img.binDir)
		}
		if dir, ok := p.Parameters["modelDir"].(string); ok && dir != models && !strings.HasPrefix(dir, models+"/") {
			t.Errorf("plugin %s: modelDir %s is not on the models volume (mounted at %s): the root filesystem is read-only", p.Name, dir, models)
		}
		dir, ok := p.Parameters["shareDir"].(string)
		switch {
		case p.Type != "predicted-latency-producer":
		case vs.share == "" && ok:
			t.Errorf("plugin %s: shareDir %s without a share volume", p.Name, dir)
		case vs.share != "" && (!ok || dir != share):
			t.Errorf("plugin %s: shareDir %q, want the share volume's mount %s: the replicas learn alone", p.Name, dir, share)
		}
	}
	return text
}

// hostPort returns the port of a host:port address.
func hostPort(t *testing.T, what, addr string) int32 {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	n, perr := strconv.ParseInt(port, 10, 32)
	if err != nil || perr != nil {
		t.Errorf("%s %q is not host:port", what, addr)
	}
	return int32(n)
}

// equalRules compares policy rules field by field.
func equalRules(a, b []rbacv1.PolicyRule) bool {
	return slices.EqualFunc(a, b, func(x, y rbacv1.PolicyRule) bool {
		return slices.Equal(x.APIGroups, y.APIGroups) && slices.Equal(x.Resources, y.Resources) && slices.Equal(x.Verbs, y.Verbs) &&
			len(x.ResourceNames) == 0 && len(x.NonResourceURLs) == 0 && len(y.ResourceNames) == 0
	})
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
