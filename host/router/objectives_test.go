package router

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/endpoints"
	"github.com/foresight-router/foresight/host/kube"
	"github.com/foresight-router/foresight/host/proxy"
	"github.com/foresight-router/foresight/sim/emulator"
	"github.com/rs/zerolog"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
)

// gieObject is an object of the Inference Extension's v1alpha2 group in namespace llm, for the
// pool named pool, with more of its spec.
func gieObject(kind, name, pool string, spec map[string]any) *unstructured.Unstructured {
	spec["poolRef"] = map[string]any{"name": pool}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "inference.networking.x-k8s.io/v1alpha2", "kind": kind,
		"metadata": map[string]any{"name": name, "namespace": "llm", "creationTimestamp": "2025-03-01T12:00:00Z"}, "spec": spec}}
}

// poolClients are fake clients of a cluster that serves the Inference Extension's CRDs, with e's
// pod, the InferencePool llama picking it and objs.
func poolClients(t *testing.T, e *podEngine, objs ...runtime.Object) kube.Clients {
	t.Helper()
	cs := fake.NewClientset(enginePod(e, true))
	cs.Discovery().(*fakediscovery.FakeDiscovery).Resources = []*metav1.APIResourceList{{
		GroupVersion: kube.ObjectiveResource.GroupVersion().String(),
		APIResources: []metav1.APIResource{{Name: kube.ObjectiveResource.Resource}, {Name: kube.ModelRewriteResource.Resource}}}}
	pool := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "inference.networking.k8s.io/v1", "kind": "InferencePool",
		"metadata": map[string]any{"name": "llama", "namespace": "llm"},
		"spec": map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"app": "vllm"}},
			"targetPorts": []any{map[string]any{"number": int64(e.port)}}}}}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		kube.PoolResource: "InferencePoolList", kube.ObjectiveResource: "InferenceObjectiveList",
		kube.ModelRewriteResource: "InferenceModelRewriteList"}, append(objs, pool)...)
	return kube.Clients{Core: cs, Dynamic: dyn}
}

// poolYAML follows the InferencePool llama of namespace llm and declares objectives of its own.
const poolYAML = `
plugins:
  - {name: queue, type: queue-scorer}
pipeline:
  scorers: [{pluginRef: queue}]
server: {listen: "127.0.0.1:0", adminListen: "127.0.0.1:0"}
objectives:
  - {name: both, priority: 1}
  - {name: config-only, priority: 2}
  - {name: theirs, priority: 3}
endpoints:
  kubernetes: {namespace: llm, inferencePool: llama}
`

// Following a pool, an objective's priority is its InferenceObjective's first (another pool's
// does not count), the config's second; the model rewrite is the pool's rules. With a selector
// both are the config's alone, and there is no model rewrite.
func TestPriorityAndModelRewriteFollowThePool(t *testing.T) {
	e := startPodEngine(t, "vllm-a", 1)
	clients := poolClients(t, e,
		gieObject("InferenceObjective", "cluster-only", "llama", map[string]any{"priority": int64(5)}),
		gieObject("InferenceObjective", "both", "llama", map[string]any{"priority": int64(7)}),
		gieObject("InferenceObjective", "theirs", "qwen", map[string]any{"priority": int64(9)}),
		gieObject("InferenceModelRewrite", "alias", "llama", map[string]any{"rules": []any{map[string]any{
			"matches": []any{map[string]any{"model": map[string]any{"value": "llama"}}},
			"targets": []any{map[string]any{"modelRewrite": emulator.DefaultModel}}}}}),
	)
	cfg, err := config.Parse(t.TempDir()+"/router.yaml", []byte(poolYAML))
	if err != nil {
		t.Fatal(err)
	}
	r := &Router{log: zerolog.Nop()}
	w, err := r.newWatcher(cfg, []Option{WithKubeClients(clients)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx, func([]endpoints.Endpoint) {}) }()
	defer func() { cancel(); <-done }()
	if err := w.WaitSynced(ctx); err != nil {
		t.Fatal(err)
	}
	prio := priority(cfg, w)
	for _, tt := range []struct {
		name string
		want string
	}{
		{"cluster-only", "5"}, // the InferenceObjective
		{"both", "7"},         // the InferenceObjective, not the config's 1
		{"config-only", "2"},  // the config's
		{"theirs", "3"},       // another pool's InferenceObjective: the config's
		{"absent", "none"},
	} {
		got := "none"
		if p, ok := prio(tt.name); ok {
			got = fmt.Sprint(p)
		}
		if got != tt.want {
			t.Errorf("priority(%q) = %s, want %s", tt.name, got, tt.want)
		}
	}
	rewrite := modelRewrite(cfg, w)
	if target, rule, ok := rewrite("llama"); !ok || target != emulator.DefaultModel || rule != "llm/alias#0" {
		t.Errorf("modelRewrite(llama) = %q, %q, %v; want %q by llm/alias#0", target, rule, ok, emulator.DefaultModel)
	}

	// A selector: the config's objectives only, no model rewrite.
	sel, err := config.Parse(t.TempDir()+"/router.yaml", []byte(strings.Replace(poolYAML, "inferencePool: llama",
		"selector: {app: vllm}, targetPort: 8000", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := priority(sel, w)("cluster-only"); ok {
		t.Errorf("with a selector, priority(cluster-only) = %d; the config declares none", p)
	}
	if modelRewrite(sel, w) != nil {
		t.Error("with a selector, a model rewrite")
	}
}

// The router started on a pool accepts an objective only the cluster declares: the proxy reads
// the InferenceObjective.
func TestRouterReadsInferenceObjectives(t *testing.T) {
	e := startPodEngine(t, "vllm-a", 1)
	clients := poolClients(t, e, gieObject("InferenceObjective", "cluster-only", "llama", map[string]any{"priority": int64(5)}))
	cfg, err := config.Parse(t.TempDir()+"/router.yaml", []byte(poolYAML))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Start(context.Background(), cfg, zerolog.Nop(), WithKubeClients(clients))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	body := fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"Name a river."}],"max_tokens":4}`, emulator.DefaultModel)
	req, err := http.NewRequest(http.MethodPost, "http://"+r.Addr()+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(proxy.HeaderObjective, "cluster-only")
	resp, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("a request with the cluster's objective: %d %s; want 200", resp.StatusCode, b)
	}
}
