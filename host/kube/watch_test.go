package kube

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/foresight-router/foresight/host/endpoints"
	"github.com/foresight-router/foresight/internal/eventually"
	"github.com/rs/zerolog"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

var vllm = map[string]string{"app": "vllm"}

// Pods of a selector come and go with their readiness, their termination, their deletion and
// their IP; pods of other labels or namespaces never count.
func TestSelectorFollowsPods(t *testing.T) {
	other := testPod("other-ns", "10.0.9.9", true, vllm)
	other.Namespace = "elsewhere"
	cs := fake.NewClientset(
		testPod("a", "10.0.0.1", true, vllm),
		testPod("b", "10.0.0.2", false, vllm), // not ready yet
		testPod("c", "10.0.0.3", true, map[string]string{"app": "other"}),
		testPod("pending", "", true, vllm), // no IP yet
		other,
	)
	rec, _ := run(t, Config{Namespace: ns, Selector: vllm, TargetPort: intstr.FromInt32(8000)}, Clients{Core: cs})
	rec.wait(t, "initial", "a=10.0.0.1:8000")

	watching(t, cs, "pods")
	ctx := context.Background()
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, testPod("d", "10.0.0.4", true, map[string]string{"app": "vllm", "gpu": "h100"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, "a ready pod added", "a=10.0.0.1:8000 d=10.0.0.4:8000")
	editPod(t, cs, "b", func(p *corev1.Pod) { setReady(p, true) })
	rec.wait(t, "b became ready", "a=10.0.0.1:8000 b=10.0.0.2:8000 d=10.0.0.4:8000")
	editPod(t, cs, "a", func(p *corev1.Pod) { setReady(p, false) })
	rec.wait(t, "a became unready", "b=10.0.0.2:8000 d=10.0.0.4:8000")
	editPod(t, cs, "d", func(p *corev1.Pod) { now := metav1.Now(); p.DeletionTimestamp = &now }) // still Ready
	rec.wait(t, "d terminating", "b=10.0.0.2:8000")
	editPod(t, cs, "b", func(p *corev1.Pod) { p.Status.PodIP = "10.0.1.2" })
	rec.wait(t, "b's IP changed", "b=10.0.1.2:8000")
	editPod(t, cs, "c", func(p *corev1.Pod) { p.Labels = map[string]string{"app": "vllm", "role": "decode"} })
	rec.wait(t, "c relabelled into the selector", "b=10.0.1.2:8000 c=10.0.0.3:8000")
	editPod(t, cs, "pending", func(p *corev1.Pod) { p.Status.PodIP = "fd00::7" })
	rec.wait(t, "an IPv6 pod got its IP", "b=10.0.1.2:8000 c=10.0.0.3:8000 pending=[fd00::7]:8000")
	for _, name := range []string{"b", "c", "pending"} {
		if err := cs.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	rec.wait(t, "every pod deleted", "")

	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, eps := range rec.lists {
		for _, e := range eps {
			if e.ID == "c" && e.Labels["role"] != "decode" {
				t.Errorf("endpoint c has labels %v, want the pod's", e.Labels)
			}
		}
	}
}

// A named targetPort resolves per pod, as a Service's does; a ready pod without that port is no
// endpoint and is logged once, however many events it goes through.
func TestNamedTargetPort(t *testing.T) {
	http := func(n int32) corev1.ContainerPort { return corev1.ContainerPort{Name: "http", ContainerPort: n} }
	metrics := corev1.ContainerPort{Name: "metrics", ContainerPort: 9400}
	cs := fake.NewClientset(
		testPod("a", "10.0.0.1", true, vllm, metrics, http(8000)),
		testPod("b", "10.0.0.2", true, vllm, http(8001)),
		testPod("c", "10.0.0.3", true, vllm, metrics),
	)
	rec, logs := run(t, Config{Namespace: ns, Selector: vllm, TargetPort: intstr.FromString("http")}, Clients{Core: cs})
	rec.wait(t, "initial", "a=10.0.0.1:8000 b=10.0.0.2:8001")
	const warning = "the pod has no container port of that name"
	eventually.Wait(t, within, "c's missing port logged", func() bool { return strings.Count(logs.String(), warning) == 1 })

	watching(t, cs, "pods")
	editPod(t, cs, "c", func(p *corev1.Pod) { p.Labels["rev"] = "2" }) // an event that changes nothing
	editPod(t, cs, "b", func(p *corev1.Pod) { setReady(p, false) })
	rec.wait(t, "b unready", "a=10.0.0.1:8000")
	editPod(t, cs, "c", func(p *corev1.Pod) { p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, http(8002)) })
	rec.wait(t, "c got the port", "a=10.0.0.1:8000 c=10.0.0.3:8002")
	if n := strings.Count(logs.String(), warning); n != 1 {
		t.Errorf("c's missing port was logged %d times, want once", n)
	}
}

// An InferencePool is followed: missing at the start (no endpoints), created, its selector and
// its ports changed, deleted (no endpoints, logged). Another pool of the namespace is ignored.
func TestInferencePool(t *testing.T) {
	cs := fake.NewClientset(
		testPod("a", "10.0.0.1", true, map[string]string{"pool": "one"}),
		testPod("b", "10.0.0.2", true, map[string]string{"pool": "two"}),
		testPod("c", "10.0.0.3", false, map[string]string{"pool": "two"}),
	)
	dyn := fakeDynamic(testPool("other", map[string]string{"pool": "one"}, 9000))
	rec, logs := run(t, Config{Namespace: ns, InferencePool: "llama"}, Clients{Core: cs, Dynamic: dyn})
	rec.wait(t, "no pool yet", "")
	if strings.Count(logs.String(), "the InferencePool does not exist") != 1 {
		t.Errorf("the missing pool is not logged once:\n%s", logs.String())
	}

	watching(t, dyn, PoolResource.Resource)
	watching(t, cs, "pods")
	ctx := context.Background()
	pools := dyn.Resource(PoolResource).Namespace(ns)
	if _, err := pools.Create(ctx, testPool("llama", map[string]string{"pool": "one"}, 8000), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, "pool created", "a=10.0.0.1:8000")
	if _, err := pools.Update(ctx, testPool("llama", map[string]string{"pool": "two"}, 8000), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, "selector changed", "b=10.0.0.2:8000")
	editPod(t, cs, "c", func(p *corev1.Pod) { setReady(p, true) })
	rec.wait(t, "c ready", "b=10.0.0.2:8000 c=10.0.0.3:8000")
	if _, err := pools.Update(ctx, testPool("llama", map[string]string{"pool": "two"}, 8000, 8001), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, "a second target port", "b:8000=10.0.0.2:8000 b:8001=10.0.0.2:8001 c:8000=10.0.0.3:8000 c:8001=10.0.0.3:8001")
	if _, err := pools.Update(ctx, testPool("llama", map[string]string{"pool": "two"}), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, "a pool without ports", "")
	eventually.Wait(t, within, "the unreadable pool logged", func() bool { return strings.Count(logs.String(), "spec.targetPorts is empty") == 1 })
	if _, err := pools.Update(ctx, testPool("llama", map[string]string{"pool": "two"}, 8001), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, "ports again", "b=10.0.0.2:8001 c=10.0.0.3:8001")
	if err := pools.Delete(ctx, "llama", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, "pool deleted", "")
	eventually.Wait(t, within, "the deletion logged", func() bool { return strings.Count(logs.String(), "the InferencePool does not exist") == 2 })
}

// Without RBAC on pods, WaitSynced names the namespace, the selector, the API server's answer
// and the permissions to grant.
func TestSyncErrorNamesRBAC(t *testing.T) {
	cs := fake.NewClientset()
	var lists atomic.Int32
	cs.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		lists.Add(1)
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "",
			errors.New(`User "system:serviceaccount:llm:foresight" cannot list resource "pods" in API group "" in the namespace "llm"`))
	})
	w, err := New(Config{Namespace: ns, Selector: vllm, TargetPort: intstr.FromInt32(8000), SyncTimeout: 1}, Clients{Core: cs}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx, func([]endpoints.Endpoint) {}) }()
	defer func() { cancel(); <-done }()
	// The second list starts after the first one's error was recorded.
	eventually.Wait(t, within, "two refused lists", func() bool { return lists.Load() >= 2 })
	err = w.WaitSynced(ctx)
	want := []string{`kubernetes discovery (namespace llm, selector app=vllm): cannot list pods in namespace llm: `,
		`cannot list resource "pods"`, `(does the service account have get/list/watch on pods?)`}
	for _, s := range want {
		if err == nil || !strings.Contains(err.Error(), s) {
			t.Fatalf("WaitSynced = %v; want it to contain %q", err, s)
		}
	}
}

// Without the InferencePool CRD (or RBAC on it), WaitSynced says so once the pods synced.
func TestSyncErrorNamesThePool(t *testing.T) {
	dyn := fakeDynamic()
	var lists atomic.Int32
	dyn.PrependReactor("list", "inferencepools", func(k8stesting.Action) (bool, runtime.Object, error) {
		lists.Add(1)
		return true, nil, apierrors.NewNotFound(PoolResource.GroupResource(), "")
	})
	w, err := New(Config{Namespace: ns, InferencePool: "llama", SyncTimeout: 1}, Clients{Core: fake.NewClientset(), Dynamic: dyn}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx, func([]endpoints.Endpoint) {}) }()
	defer func() { cancel(); <-done }()
	eventually.Wait(t, within, "two refused lists", func() bool { return lists.Load() >= 2 })
	eventually.Wait(t, within, "the pods synced", w.pods.HasSynced)
	err = w.WaitSynced(ctx)
	want := `kubernetes discovery (namespace llm, inferencePool "llama"): cannot list inferencepools.inference.networking.k8s.io in namespace llm: ` +
		`inferencepools.inference.networking.k8s.io "" not found (is the InferencePool CRD inference.networking.k8s.io/v1 installed, ` +
		`and does the service account have get/list/watch on inferencepools in group inference.networking.k8s.io?)`
	if err == nil || err.Error() != want {
		t.Fatalf("WaitSynced =\n%v\nwant\n%s", err, want)
	}
}

// Run is called once; a second call returns an error at once.
func TestRunTwice(t *testing.T) {
	w, err := New(Config{Namespace: ns, Selector: vllm, TargetPort: intstr.FromInt32(8000)}, Clients{Core: fake.NewClientset()}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx, func([]endpoints.Endpoint) {}) }()
	if err := w.WaitSynced(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Run(ctx, func([]endpoints.Endpoint) {}); err == nil {
		t.Error("a second Run returned nil")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
}
