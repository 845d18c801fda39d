package kube

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/foresight-router/foresight/host/endpoints"
	"github.com/foresight-router/foresight/internal/eventually"
	"github.com/foresight-router/foresight/internal/kubeapi"
	"github.com/rs/zerolog"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// apply creates or updates u (made for ns, the fake tests' namespace) in c's namespace as res,
// by server-side apply, and returns the API server's error.
func (c *cluster) apply(res schema.GroupVersionResource, u *unstructured.Unstructured) error {
	u = u.DeepCopy()
	u.SetNamespace(c.ns)
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp") // the API server's to set
	_, err := c.dyn.Resource(res).Namespace(c.ns).Apply(context.Background(), u.GetName(), u,
		metav1.ApplyOptions{FieldManager: "kube-test", Force: true})
	return err
}

// mustApply is apply, failing the test on an error.
func (c *cluster) mustApply(res schema.GroupVersionResource, u *unstructured.Unstructured) {
	c.t.Helper()
	if err := c.apply(res, u); err != nil {
		c.t.Fatalf("applying %s %s: %v", res.Resource, u.GetName(), err)
	}
}

func (c *cluster) delete(res schema.GroupVersionResource, name string) {
	c.t.Helper()
	if err := c.dyn.Resource(res).Namespace(c.ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		c.t.Fatalf("deleting %s %s: %v", res.Resource, name, err)
	}
}

// The CRD files of testdata and a resource each defines.
const (
	poolCRD  = "inferencepool-crd.yaml"      // PoolResource
	extraCRD = "objective-rewrite-crds.yaml" // ObjectiveResource, ModelRewriteResource
)

// ensureCRDs installs the CRDs of the testdata file unless the server already serves res, so
// that each subtest of TestAPIServer also runs alone.
func ensureCRDs(t *testing.T, s *kubeapi.Server, file string, res schema.GroupVersionResource) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	ok, err := served(t.Context(), cs.Discovery(), res)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		s.InstallCRDs(t, readTestdata(t, file))
	}
}

// An InferencePool, stored by the API server under its CRD, is followed: missing at the start
// (no endpoints), created, its selector and ports changed, deleted. Another pool is ignored; a
// pool the CRD refuses changes nothing. The InferenceObjective and InferenceModelRewrite CRDs are
// not installed yet (ObjectivesAndRewrites, which runs after, installs them): the watcher says so
// and goes on.
func apiInferencePool(t *testing.T, s *kubeapi.Server) {
	ensureCRDs(t, s, poolCRD, PoolResource)
	c := newCluster(t, s, "pool")
	c.pod("a", "10.0.0.1", true, map[string]string{"pool": "one"})
	c.pod("b", "10.0.0.2", true, map[string]string{"pool": "two"})
	c.pod("c", "10.0.0.3", false, map[string]string{"pool": "two"})
	c.mustApply(PoolResource, testPool("other", map[string]string{"pool": "one"}, 9000))
	rec, logs := run(t, Config{Namespace: c.ns, InferencePool: "llama"}, c.clients())
	rec.wait(t, "no pool yet", "")
	for _, want := range []string{"the InferencePool does not exist", "the InferenceObjective CRD is not installed",
		"the InferenceModelRewrite CRD is not installed"} {
		if n := strings.Count(logs.String(), want); n != 1 {
			t.Errorf("%q logged %d times, want once:\n%s", want, n, logs.String())
		}
	}

	c.mustApply(PoolResource, testPool("llama", map[string]string{"pool": "one"}, 8000))
	rec.wait(t, "pool created", "a=10.0.0.1:8000")
	c.mustApply(PoolResource, testPool("llama", map[string]string{"pool": "two"}, 8000))
	rec.wait(t, "selector changed", "b=10.0.0.2:8000")
	c.status("c", func(s *corev1.PodStatus) { setReadyStatus(s, true) })
	rec.wait(t, "c ready", "b=10.0.0.2:8000 c=10.0.0.3:8000")
	c.mustApply(PoolResource, testPool("llama", map[string]string{"pool": "two"}, 8000, 8001))
	rec.wait(t, "a second target port", "b:8000=10.0.0.2:8000 b:8001=10.0.0.2:8001 c:8000=10.0.0.3:8000 c:8001=10.0.0.3:8001")
	if err := c.apply(PoolResource, testPool("llama", map[string]string{"pool": "two"})); !apierrors.IsInvalid(err) {
		t.Fatalf("a pool without ports: %v; want the CRD to refuse it", err)
	}
	// Refused before validation: server-side apply cannot merge a list whose map key repeats.
	if err := c.apply(PoolResource, testPool("llama", map[string]string{"pool": "two"}, 8001, 8001)); err == nil {
		t.Fatal("a pool with a port twice was applied; want the CRD's list-map key to refuse it")
	}
	c.mustApply(PoolResource, testPool("llama", map[string]string{"pool": "two"}, 8001))
	rec.wait(t, "one port again", "b=10.0.0.2:8001 c=10.0.0.3:8001")
	c.delete(PoolResource, "llama")
	rec.wait(t, "pool deleted", "")
	eventually.Wait(t, within, "the deletion logged", func() bool { return strings.Count(logs.String(), "the InferencePool does not exist") == 2 })
}

// With their CRDs installed, discovery serves InferenceObjective and InferenceModelRewrite, and
// the pool's are followed: priorities (unset is 0, negative allowed; another pool's and another
// group's do not count) and rewrite rules, created, changed and deleted.
func apiObjectivesAndRewrites(t *testing.T, s *kubeapi.Server) {
	ensureCRDs(t, s, poolCRD, PoolResource)
	ensureCRDs(t, s, extraCRD, ObjectiveResource)
	c := newCluster(t, s, "crds")
	c.pod("a", "10.0.0.1", true, vllm)
	c.mustApply(PoolResource, testPool("llama", vllm, 8000))
	otherGroup := testObjective("other-group", "llama", int64(7))
	otherGroup.Object["spec"].(map[string]any)["poolRef"].(map[string]any)["group"] = "example.com"
	for _, o := range []*unstructured.Unstructured{testObjective("chat", "llama", int64(5)), testObjective("batch", "llama", nil),
		testObjective("offline", "llama", int64(-2)), testObjective("theirs", "qwen", int64(9)), otherGroup} {
		c.mustApply(ObjectiveResource, o)
	}
	c.mustApply(ModelRewriteResource, testRewrite("canary", "llama", time.Time{}, rewriteRule([]string{"llama"}, "llama-v2")))
	c.mustApply(ModelRewriteResource, testRewrite("theirs", "qwen", time.Time{}, rewriteRule(nil, "qwen-v2")))

	w, rec, logs := start(t, Config{Namespace: c.ns, InferencePool: "llama"}, c.clients())
	rec.wait(t, "initial", "a=10.0.0.1:8000")
	if strings.Contains(logs.String(), "CRD is not installed") {
		t.Errorf("a CRD reported missing:\n%s", logs.String())
	}
	priority := func(name string) string {
		p, ok := w.Objective(name)
		if !ok {
			return "none"
		}
		return strconv.Itoa(int(p))
	}
	rewrite := func(model string) string {
		target, rule, ok := w.ModelRewrite(model)
		if !ok {
			return "none"
		}
		return target + " by " + rule
	}
	check := func(what string, want map[string]string, f func(string) string) {
		t.Helper()
		for k, v := range want {
			eventually.Wait(t, within, what+": "+k+" = "+v, func() bool { return f(k) == v })
		}
	}
	// Published before WaitSynced returned.
	if got := priority("chat"); got != "5" {
		t.Errorf("Objective(chat) right after sync = %s; want 5", got)
	}
	if got := rewrite("llama"); got != "llama-v2 by crds/canary#0" {
		t.Errorf("ModelRewrite(llama) right after sync = %s; want llama-v2 by crds/canary#0", got)
	}
	check("initial", map[string]string{"chat": "5", "batch": "0", "offline": "-2", "theirs": "none", "other-group": "none"}, priority)
	check("initial", map[string]string{"llama": "llama-v2 by crds/canary#0", "qwen": "none"}, rewrite)

	c.mustApply(ObjectiveResource, testObjective("chat", "llama", int64(1)))
	c.delete(ObjectiveResource, "batch")
	c.mustApply(ObjectiveResource, testObjective("theirs", "llama", int64(9)))
	check("changed", map[string]string{"chat": "1", "batch": "none", "theirs": "9"}, priority)
	c.mustApply(ModelRewriteResource, testRewrite("canary", "llama", time.Time{}, rewriteRule([]string{"llama"}, "llama-v3"),
		rewriteRule(nil, "default-model")))
	check("changed", map[string]string{"llama": "llama-v3 by crds/canary#0", "mistral": "default-model by crds/canary#1"}, rewrite)
	c.delete(ModelRewriteResource, "canary")
	check("deleted", map[string]string{"llama": "none", "mistral": "none"}, rewrite)
}

// Through service accounts' eyes (impersonated): what RBAC refuses is named by WaitSynced with
// the API server's own answer: pods first, then the pool, then the pool's InferenceObjectives
// (their CRD is served, so they are watched); with the chart's rules (deploy/helm/foresight's
// rbac.yaml) the watcher syncs. Each service account has its own Role; the refusals run at once.
func apiRBAC(t *testing.T, s *kubeapi.Server) {
	ensureCRDs(t, s, poolCRD, PoolResource)
	ensureCRDs(t, s, extraCRD, ObjectiveResource)
	c := newCluster(t, s, "rbac")
	c.pod("a", "10.0.0.1", true, vllm)
	c.mustApply(PoolResource, testPool("llama", vllm, 8000))
	read := []string{"get", "list", "watch"}
	pods := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: read}
	pool := rbacv1.PolicyRule{APIGroups: []string{PoolResource.Group}, Resources: []string{PoolResource.Resource}, Verbs: read}
	extra := rbacv1.PolicyRule{APIGroups: []string{ObjectiveResource.Group},
		Resources: []string{ObjectiveResource.Resource, ModelRewriteResource.Resource}, Verbs: read}
	as := func(sa string, rules []rbacv1.PolicyRule, last schema.GroupVersionResource) (Clients, string) {
		t.Helper()
		user := "system:serviceaccount:" + c.ns + ":" + sa
		cs, err := kubernetes.NewForConfig(s.Impersonating(user))
		if err != nil {
			t.Fatal(err)
		}
		dyn, err := dynamic.NewForConfig(s.Impersonating(user))
		if err != nil {
			t.Fatal(err)
		}
		if len(rules) > 0 {
			if _, err := c.cs.RbacV1().Roles(c.ns).Create(t.Context(), &rbacv1.Role{
				ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: c.ns}, Rules: rules}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := c.cs.RbacV1().RoleBindings(c.ns).Create(t.Context(), &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: c.ns},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: sa},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: c.ns}},
			}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			// The authorizer reads roles from its own informers: wait until it grants the last rule.
			eventually.Wait(t, within, sa+"'s role in force", func() bool {
				_, err := dyn.Resource(last).Namespace(c.ns).List(t.Context(), metav1.ListOptions{})
				return err == nil
			})
		}
		return Clients{Core: cs, Dynamic: dyn}, `User "` + user + `" cannot list resource `
	}
	podsGVR := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	cfg := Config{Namespace: c.ns, InferencePool: "llama", SyncTimeout: 3 * time.Second}
	refusals := []struct {
		sa    string
		rules []rbacv1.PolicyRule
		cfg   Config
		want  func(forbidden string) []string
	}{
		{"nothing", nil, Config{Namespace: c.ns, Selector: vllm, TargetPort: intstr.FromInt32(8000), SyncTimeout: cfg.SyncTimeout},
			func(forbidden string) []string {
				return []string{`kubernetes discovery (namespace rbac, selector app=vllm): cannot list pods in namespace rbac: `,
					forbidden + `"pods" in API group "" in the namespace "rbac"`, `(does the service account have get/list/watch on pods?)`}
			}},
		{"pods-only", []rbacv1.PolicyRule{pods}, cfg, func(forbidden string) []string {
			return []string{`kubernetes discovery (namespace rbac, inferencePool "llama"): cannot list inferencepools.inference.networking.k8s.io in namespace rbac: `,
				forbidden + `"inferencepools" in API group "inference.networking.k8s.io" in the namespace "rbac"`}
		}},
		{"no-objectives", []rbacv1.PolicyRule{pods, pool}, cfg, func(forbidden string) []string {
			return []string{`cannot list inferenceobjectives.inference.networking.x-k8s.io in namespace rbac: `,
				forbidden + `"inferenceobjectives" in API group "inference.networking.x-k8s.io" in the namespace "rbac"`,
				`does the service account have get/list/watch on inferenceobjectives in group inference.networking.x-k8s.io?`}
		}},
	}
	t.Run("refused", func(t *testing.T) {
		for _, r := range refusals {
			last := podsGVR
			if len(r.rules) > 1 {
				last = PoolResource
			}
			clients, forbidden := as(r.sa, r.rules, last)
			t.Run(r.sa, func(t *testing.T) {
				t.Parallel()
				wantErr(t, r.sa, syncErr(t, r.cfg, clients), r.want(forbidden)...)
			})
		}
	})
	clients, _ := as("chart", []rbacv1.PolicyRule{pods, pool, extra}, ModelRewriteResource)
	rec, _ := run(t, cfg, clients)
	rec.wait(t, "the chart's grants", "a=10.0.0.1:8000")
}

// syncErr runs a watcher of cfg through clients until WaitSynced returns, and returns its error.
func syncErr(t *testing.T, cfg Config, clients Clients) error {
	t.Helper()
	w, err := New(cfg, clients, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx, func([]endpoints.Endpoint) {}) }()
	defer func() { cancel(); <-done }()
	return w.WaitSynced(ctx)
}

// wantErr fails t unless err holds every one of want.
func wantErr(t *testing.T, what string, err error, want ...string) {
	t.Helper()
	for _, s := range want {
		if err == nil || !strings.Contains(err.Error(), s) {
			t.Errorf("%s: WaitSynced = %v; want it to contain %q", what, err, s)
		}
	}
}
