package kube

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/foresight-router/foresight/host/endpoints"
	"github.com/foresight-router/foresight/internal/eventually"
	"github.com/rs/zerolog"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// serveCRDs makes cs's discovery list the Inference Extension's v1alpha2 resources, as a cluster
// with their CRDs installed does.
func serveCRDs(cs *fake.Clientset) *fake.Clientset {
	cs.Discovery().(*fakediscovery.FakeDiscovery).Resources = []*metav1.APIResourceList{{
		GroupVersion: ObjectiveResource.GroupVersion().String(),
		APIResources: []metav1.APIResource{
			{Name: ObjectiveResource.Resource, Kind: "InferenceObjective", Namespaced: true},
			{Name: ModelRewriteResource.Resource, Kind: "InferenceModelRewrite", Namespaced: true},
		}}}
	return cs
}

// testObjective is an InferenceObjective of ns for pool; priority nil leaves spec.priority unset.
func testObjective(name, pool string, priority any) *unstructured.Unstructured {
	spec := map[string]any{"poolRef": map[string]any{"group": PoolResource.Group, "name": pool}}
	if priority != nil {
		spec["priority"] = priority
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "inference.networking.x-k8s.io/v1alpha2", "kind": "InferenceObjective",
		"metadata": map[string]any{"name": name, "namespace": ns}, "spec": spec}}
}

// testRewrite is an InferenceModelRewrite of ns for pool, created at created, with rules as the
// API server returns them.
func testRewrite(name, pool string, created time.Time, rules ...any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "inference.networking.x-k8s.io/v1alpha2", "kind": "InferenceModelRewrite",
		"metadata": map[string]any{"name": name, "namespace": ns, "creationTimestamp": created.UTC().Format(time.RFC3339)},
		"spec":     map[string]any{"poolRef": map[string]any{"name": pool}, "rules": rules}}}
}

// rewriteRule is a rule matching models exactly (none: every model) with targets "model:weight"
// or "model" (weight unset).
func rewriteRule(models []string, targets ...string) any {
	matches := []any{}
	for _, m := range models {
		matches = append(matches, map[string]any{"model": map[string]any{"type": "Exact", "value": m}})
	}
	ts := []any{}
	for _, t := range targets {
		model, weight, hasWeight := strings.Cut(t, ":")
		target := map[string]any{"modelRewrite": model}
		if hasWeight {
			n, err := strconv.ParseInt(weight, 10, 64)
			if err != nil {
				panic(err)
			}
			target["weight"] = n
		}
		ts = append(ts, target)
	}
	return map[string]any{"matches": matches, "targets": ts}
}

// llama is the pool the watchers of these tests follow.
var llama = Config{Namespace: ns, InferencePool: "llama"}

// The pool's InferenceObjectives give priorities: unset is 0, negative allowed; another pool's,
// one of another group and one that cannot be read do not count (the last logged once per
// change); updates and deletions are followed.
func TestObjectives(t *testing.T) {
	otherGroup := testObjective("other-group", "llama", int64(7))
	otherGroup.Object["spec"].(map[string]any)["poolRef"].(map[string]any)["group"] = "example.com"
	dyn := fakeDynamic(
		testObjective("chat", "llama", int64(5)),
		testObjective("batch", "llama", nil),
		testObjective("offline", "llama", float64(-2)), // a generic JSON decoder's number
		testObjective("theirs", "qwen", int64(9)),
		otherGroup,
		testObjective("bad", "llama", "high"),
	)
	w, _, logs := start(t, llama, Clients{Core: serveCRDs(fake.NewClientset()), Dynamic: dyn})
	check := func(what string, want map[string]string) {
		t.Helper()
		show := func(name string) string {
			p, ok := w.Objective(name)
			if !ok {
				return "none"
			}
			return strconv.Itoa(int(p))
		}
		for name, priority := range want {
			eventually.Wait(t, within, what+": "+name+" = "+priority, func() bool { return show(name) == priority })
		}
	}
	// Published before WaitSynced returned: no wait needed for the first state.
	if p, ok := w.Objective("chat"); !ok || p != 5 {
		t.Fatalf("Objective(chat) right after sync = %d, %v; want 5", p, ok)
	}
	check("initial", map[string]string{"chat": "5", "batch": "0", "offline": "-2", "theirs": "none", "other-group": "none", "bad": "none", "absent": "none"})
	const bad = `InferenceObjective \"bad\" is skipped: spec.priority is high; accepted: a whole number from -2147483648 to 2147483647`
	eventually.Wait(t, within, "the unreadable objective logged", func() bool { return strings.Count(logs.String(), bad) == 1 })

	watching(t, dyn, ObjectiveResource.Resource)
	ctx := context.Background()
	objs := dyn.Resource(ObjectiveResource).Namespace(ns)
	if _, err := objs.Update(ctx, testObjective("chat", "llama", int64(-3)), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	check("chat updated", map[string]string{"chat": "-3"})
	if _, err := objs.Update(ctx, testObjective("theirs", "llama", int64(9)), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	check("theirs moved to llama", map[string]string{"theirs": "9"})
	if err := objs.Delete(ctx, "chat", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	check("chat deleted", map[string]string{"chat": "none", "batch": "0"})
	if _, err := objs.Update(ctx, testObjective("bad", "llama", int64(1)), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	check("bad fixed", map[string]string{"bad": "1"})
	// Every event rebuilt the objectives; the unreadable one was logged once all the same.
	if n := strings.Count(logs.String(), bad); n != 1 {
		t.Errorf("the unreadable objective was logged %d times, want once", n)
	}
}

// The pool's InferenceModelRewrites rewrite models with their precedence (a rule naming the
// model over a generic one, the oldest resource first); another pool's do not count; an invalid
// rule and an unreadable object are skipped and logged; updates and deletions are followed.
func TestModelRewrites(t *testing.T) {
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	regex := testRewrite("regex", "llama", t0, rewriteRule([]string{"llama"}, "never"))
	regex.Object["spec"].(map[string]any)["rules"].([]any)[0].(map[string]any)["matches"].([]any)[0].(map[string]any)["model"].(map[string]any)["type"] = "RegularExpression"
	dyn := fakeDynamic(
		testRewrite("fallback", "llama", t0, rewriteRule(nil, "llama-default")),
		testRewrite("canary", "llama", t0.Add(time.Hour),
			rewriteRule([]string{"qwen"}), // #0: no targets, skipped
			rewriteRule([]string{"llama"}, "llama-v2:100")),
		testRewrite("older-canary", "llama", t0.Add(time.Minute), rewriteRule([]string{"llama"}, "llama-v1")),
		testRewrite("theirs", "qwen", t0.Add(-time.Hour), rewriteRule([]string{"llama"}, "theirs")),
		regex,
	)
	w, _, logs := start(t, llama, Clients{Core: serveCRDs(fake.NewClientset()), Dynamic: dyn})
	show := func(model string) string {
		target, rule, ok := w.ModelRewrite(model)
		if !ok {
			return "none"
		}
		return target + " by " + rule
	}
	tests := []struct{ what, model, want string }{
		// canary and older-canary both name llama: older-canary was created first. theirs is
		// older still but of another pool; regex is unreadable.
		{"initial", "llama", "llama-v1 by llm/older-canary#0"},
		// No rule names qwen (canary's was invalid): the generic rule.
		{"initial", "qwen", "llama-default by llm/fallback#0"},
	}
	for _, tt := range tests {
		if got := show(tt.model); got != tt.want {
			t.Errorf("%s: ModelRewrite(%q) = %s, want %s", tt.what, tt.model, got, tt.want)
		}
	}
	for _, want := range []string{
		`model rewrite rule llm/canary#0: no targets: name at least one model to rewrite to; the rule is skipped`,
		`InferenceModelRewrite \"regex\" is skipped: spec.rules[0].matches[0].model.type is RegularExpression; accepted: Exact`,
	} {
		eventually.Wait(t, within, "logged: "+want, func() bool { return strings.Count(logs.String(), want) == 1 })
	}

	watching(t, dyn, ModelRewriteResource.Resource)
	ctx := context.Background()
	rws := dyn.Resource(ModelRewriteResource).Namespace(ns)
	if err := rws.Delete(ctx, "older-canary", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually.Wait(t, within, "older-canary deleted: canary's rule", func() bool { return show("llama") == "llama-v2 by llm/canary#1" })
	if _, err := rws.Update(ctx, testRewrite("canary", "llama", t0.Add(time.Hour), rewriteRule([]string{"mistral"}, "mistral-v3")), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually.Wait(t, within, "canary updated: llama falls back", func() bool {
		return show("llama") == "llama-default by llm/fallback#0" && show("mistral") == "mistral-v3 by llm/canary#0"
	})
	if err := rws.Delete(ctx, "fallback", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually.Wait(t, within, "fallback deleted: no rule for llama", func() bool { return show("llama") == "none" })
}

// Without the CRDs (discovery does not list them) nothing of them is listed or watched, Run and
// WaitSynced succeed, each absence is logged once at info, and nothing is rewritten or
// prioritized.
func TestCRDsNotInstalled(t *testing.T) {
	dyn := fakeDynamic(testPool("llama", vllm, 8000), testObjective("chat", "llama", int64(5)),
		testRewrite("r", "llama", time.Now(), rewriteRule(nil, "x")))
	w, rec, logs := start(t, llama, Clients{Core: fake.NewClientset(testPod("a", "10.0.0.1", true, vllm)), Dynamic: dyn})
	rec.wait(t, "the pool's pods", "a=10.0.0.1:8000")
	for _, a := range dyn.Actions() {
		if r := a.GetResource().Resource; r != PoolResource.Resource {
			t.Errorf("the dynamic client was asked to %s %s", a.GetVerb(), r)
		}
	}
	if _, ok := w.Objective("chat"); ok {
		t.Error("an objective without its CRD")
	}
	if target, _, ok := w.ModelRewrite("llama"); ok {
		t.Errorf("llama rewritten to %q without the CRD", target)
	}
	for _, want := range []string{
		`"level":"info","namespace":"llm","inferencePool":"llama","resource":"inferenceobjectives.inference.networking.x-k8s.io","version":"v1alpha2","message":"kubernetes discovery: the InferenceObjective CRD is not installed; not watched: x-gateway-inference-objective names the config's objectives only"`,
		`"message":"kubernetes discovery: the InferenceModelRewrite CRD is not installed; not watched: models are not rewritten by the cluster's rules"`,
	} {
		if n := strings.Count(logs.String(), want); n != 1 {
			t.Errorf("logged %d times, want once: %s\n%s", n, want, logs.String())
		}
	}
	// A selector watches no pool, hence none of the pool's objectives: no discovery either.
	cs := serveCRDs(fake.NewClientset())
	ws, _, _ := start(t, Config{Namespace: ns, Selector: vllm, TargetPort: intstr.FromInt32(8000)}, Clients{Core: cs})
	if _, ok := ws.Objective("chat"); ok {
		t.Error("a selector's watcher has an objective")
	}
	if slices.ContainsFunc(cs.Actions(), func(a k8stesting.Action) bool { return a.GetResource().Resource == "resource" }) {
		t.Error("a selector's watcher asked discovery")
	}
}

// With the CRD served but its list refused (no RBAC), WaitSynced names the resource and the
// grant.
func TestSyncErrorNamesObjectives(t *testing.T) {
	dyn := fakeDynamic(testPool("llama", vllm, 8000))
	var lists atomic.Int32
	dyn.PrependReactor("list", ObjectiveResource.Resource, func(k8stesting.Action) (bool, runtime.Object, error) {
		lists.Add(1)
		return true, nil, apierrors.NewForbidden(ObjectiveResource.GroupResource(), "",
			errors.New(`User "system:serviceaccount:llm:foresight" cannot list resource "inferenceobjectives"`))
	})
	cfg := llama
	cfg.SyncTimeout = 1
	w, err := New(cfg, Clients{Core: serveCRDs(fake.NewClientset()), Dynamic: dyn}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx, func([]endpoints.Endpoint) {}) }()
	defer func() { cancel(); <-done }()
	eventually.Wait(t, within, "two refused lists", func() bool { return lists.Load() >= 2 })
	eventually.Wait(t, within, "the pods and the pool synced", func() bool { return w.pods.HasSynced() && w.pool.HasSynced() })
	err = w.WaitSynced(ctx)
	want := []string{`kubernetes discovery (namespace llm, inferencePool "llama"): cannot list inferenceobjectives.inference.networking.x-k8s.io in namespace llm: `,
		`cannot list resource "inferenceobjectives"`,
		`(the cluster serves inference.networking.x-k8s.io/v1alpha2: does the service account have get/list/watch on inferenceobjectives in group inference.networking.x-k8s.io?)`}
	for _, s := range want {
		if err == nil || !strings.Contains(err.Error(), s) {
			t.Fatalf("WaitSynced = %v; want it to contain %q", err, s)
		}
	}
}
