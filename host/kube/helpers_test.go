package kube

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/foresight-router/foresight/host/endpoints"
	"github.com/foresight-router/foresight/internal/eventually"
	"github.com/foresight-router/foresight/internal/fakewatch"
	"github.com/foresight-router/foresight/internal/logbuf"
	"github.com/rs/zerolog"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
)

// ns is the namespace the tests' pods and pools live in.
const ns = "llm"

// within bounds every wait of these tests.
const within = 10 * time.Second

// testPod is a pod of ns with one container serving ports; ready sets its Ready condition.
func testPod(name, ip string, ready bool, labels map[string]string, ports ...corev1.ContainerPort) *corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "engine", Ports: ports}}},
		Status: corev1.PodStatus{PodIP: ip, Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, {Type: corev1.PodReady, Status: status}}},
	}
}

func setReady(p *corev1.Pod, ready bool) {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodReady {
			p.Status.Conditions[i].Status = corev1.ConditionFalse
			if ready {
				p.Status.Conditions[i].Status = corev1.ConditionTrue
			}
		}
	}
}

// testPool is an InferencePool of ns as the API server returns it (numbers are int64).
func testPool(name string, match map[string]string, ports ...int64) *unstructured.Unstructured {
	ml := map[string]any{}
	for k, v := range match {
		ml[k] = v
	}
	tp := []any{}
	for _, p := range ports {
		tp = append(tp, map[string]any{"number": p})
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "inference.networking.k8s.io/v1", "kind": "InferencePool",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{"selector": map[string]any{"matchLabels": ml}, "targetPorts": tp,
			"endpointPickerRef": map[string]any{"name": "foresight-epp", "port": map[string]any{"number": int64(9002)}}},
	}}
}

// fakeDynamic is a dynamic client that knows the list kinds of the InferencePool, the
// InferenceObjective and the InferenceModelRewrite.
func fakeDynamic(objs ...runtime.Object) *dynamicfake.FakeDynamicClient {
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{PoolResource: "InferencePoolList",
			ObjectiveResource: "InferenceObjectiveList", ModelRewriteResource: "InferenceModelRewriteList"}, objs...)
}

// recorder keeps every list a watcher delivered and checks the callback contract: one call at a
// time.
type recorder struct {
	mu      sync.Mutex
	lists   [][]endpoints.Endpoint
	inside  atomic.Int32
	overlap atomic.Bool
}

func (r *recorder) onChange(eps []endpoints.Endpoint) {
	if r.inside.Add(1) > 1 {
		r.overlap.Store(true)
	}
	defer r.inside.Add(-1)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lists = append(r.lists, eps)
}

// last shows the last list delivered as "id=address" words, "-" when none was.
func (r *recorder) last() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.lists) == 0 {
		return "-"
	}
	return show(r.lists[len(r.lists)-1])
}

func show(eps []endpoints.Endpoint) string {
	words := make([]string, len(eps))
	for i, e := range eps {
		words[i] = e.ID + "=" + e.Address
	}
	return strings.Join(words, " ")
}

// wait waits until the last list delivered shows as want.
func (r *recorder) wait(t *testing.T, what, want string) {
	t.Helper()
	eventually.Wait(t, within, what+": the list "+want, func() bool { return r.last() == want })
}

// check fails t if two calls overlapped or two lists in a row were the same.
func (r *recorder) check(t *testing.T) {
	t.Helper()
	if r.overlap.Load() {
		t.Error("onChange was called while another call ran")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := 1; i < len(r.lists); i++ {
		if sameList(r.lists[i], r.lists[i-1]) {
			t.Errorf("list %d was delivered twice in a row: %s", i, show(r.lists[i]))
		}
	}
}

// run starts a watcher of cfg over c and waits for its initial list; the test's cleanup stops it
// and checks the callback contract.
func run(t *testing.T, cfg Config, c Clients) (*recorder, *logbuf.Buffer) {
	t.Helper()
	_, rec, logs := start(t, cfg, c)
	return rec, logs
}

// start is run that also returns the watcher.
func start(t *testing.T, cfg Config, c Clients) (*Watcher, *recorder, *logbuf.Buffer) {
	t.Helper()
	logs := &logbuf.Buffer{}
	w, err := New(cfg, c, zerolog.New(logs))
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx, rec.onChange) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(within):
			t.Errorf("Run did not return within %v of its context's end", within)
		}
		rec.check(t)
	})
	if err := w.WaitSynced(ctx); err != nil {
		t.Fatal(err)
	}
	return w, rec, logs
}

// watching waits until the fake client c has opened a watch of resource. A fake client's watch
// delivers what changes from the moment it is opened: a change made between an informer's list
// (which WaitSynced waits for) and its watch is never delivered, so a test must wait for the watch
// before it changes objects. The fake records the action and registers the watch under one lock,
// so a recorded watch is a registered one.
func watching(t *testing.T, c fakewatch.Actions, resource string) {
	t.Helper()
	fakewatch.Wait(t, c, resource, within)
}

// editPod applies f to the pod called name and writes it back.
func editPod(t *testing.T, cs *fake.Clientset, name string, f func(*corev1.Pod)) {
	t.Helper()
	ctx := context.Background()
	p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f(p)
	if _, err := cs.CoreV1().Pods(ns).Update(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}
