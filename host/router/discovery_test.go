package router

import (
	"bytes"
	"context"
	"fmt"
	"github.com/foresight-router/foresight/internal/logbuf"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/kube"
	"github.com/foresight-router/foresight/host/metrics"
	"github.com/foresight-router/foresight/internal/eventually"
	"github.com/foresight-router/foresight/internal/fakewatch"
	"github.com/foresight-router/foresight/sim/emulator"
	"github.com/foresight-router/foresight/sim/engine"
	"github.com/rs/zerolog"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// churnWait bounds every wait of the discovery tests.
const churnWait = 20 * time.Second

// podEngine is an emulated model server standing for one pod; it counts the completion requests
// it receives and holds.
type podEngine struct {
	name     string
	port     int32
	srv      *emulator.Server
	hs       *http.Server
	received atomic.Int64
	active   atomic.Int64
	stopOnce sync.Once
}

func startPodEngine(t *testing.T, name string, seed uint64) *podEngine {
	t.Helper()
	cfg, err := engine.Preset("llama-3.1-8b-h100-tp2")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Seed = seed
	srv, err := emulator.NewServer(cfg, emulator.DefaultModel)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		srv.Close()
		t.Fatal(err)
	}
	e := &podEngine{name: name, port: int32(ln.Addr().(*net.TCPAddr).Port), srv: srv}
	h := srv.Handler()
	e.hs = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/v1/") {
			e.received.Add(1)
			e.active.Add(1)
			defer e.active.Add(-1)
		}
		h.ServeHTTP(w, r)
	})}
	go func() { _ = e.hs.Serve(ln) }()
	t.Cleanup(e.stop)
	return e
}

func (e *podEngine) stop() {
	e.stopOnce.Do(func() {
		_ = e.hs.Close()
		e.srv.Close()
	})
}

// enginePod is the pod object of e: PodIP 127.0.0.1 and a container port named http at e's port.
func enginePod(e *podEngine, ready bool) *corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: e.name, Namespace: "llm", Labels: map[string]string{"app": "vllm", "pod": e.name}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "vllm", Ports: []corev1.ContainerPort{
			{Name: "metrics-proxy", ContainerPort: 1}, {Name: "http", ContainerPort: e.port}}}}},
		Status: corev1.PodStatus{PodIP: "127.0.0.1", Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}},
	}
}

// discoveryYAML fronts the pods labelled app=vllm of namespace llm, on their port named http,
// with a round-robin picker so that every pod takes requests; every decision trace is kept.
const discoveryYAML = `
plugins:
  - {name: queue, type: queue-scorer}
  - {name: rr, type: round-robin-picker}
pipeline:
  scorers: [{pluginRef: queue}]
  picker: {pluginRef: rr}
server: {listen: "127.0.0.1:0", adminListen: "127.0.0.1:0", decisions: 200000}
endpoints:
  kubernetes:
    namespace: llm
    selector: {app: vllm}
    targetPort: http
`

// load is a few clients sending completions to the router one after the other until stopped.
type load struct {
	url     string
	client  *http.Client
	stop    chan struct{}
	wg      sync.WaitGroup
	done    atomic.Int64   // answers read to their end
	started []atomic.Int64 // per client: when its request in flight was sent (UnixNano), 0 when none is

	mu       sync.Mutex
	failures []string // requests lost or not answered 200 with a whole answer
}

func startLoad(url string, clients int) *load {
	l := &load{url: url, client: &http.Client{Timeout: churnWait}, stop: make(chan struct{}), started: make([]atomic.Int64, clients)}
	for i := range clients {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for n := 0; ; n++ {
				select {
				case <-l.stop:
					return
				default:
				}
				l.started[i].Store(time.Now().UnixNano())
				if err := l.one(n%2 == 0); err != nil {
					l.mu.Lock()
					l.failures = append(l.failures, fmt.Sprintf("client %d request %d: %v", i, n, err))
					l.mu.Unlock()
				}
				l.started[i].Store(0)
				l.done.Add(1)
			}
		}()
	}
	return l
}

// one sends a completion and reads its answer to the end: a 200 with choices, or, streamed,
// events ending with [DONE].
func (l *load) one(stream bool) error {
	body := fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"Name a river."}],"max_tokens":4,"stream":%v}`,
		emulator.DefaultModel, stream)
	resp, err := l.client.Post(l.url+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		return fmt.Errorf("lost: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	switch {
	case err != nil:
		return fmt.Errorf("answer cut: %w", err)
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("status %d: %s", resp.StatusCode, b)
	case stream && !bytes.HasSuffix(bytes.TrimSpace(b), []byte("data: [DONE]")):
		return fmt.Errorf("a stream without [DONE]: %q", b)
	case !stream && !bytes.Contains(b, []byte(`"choices"`)):
		return fmt.Errorf("an answer without choices: %q", b)
	}
	return nil
}

// progress waits until n more answers were read.
func (l *load) progress(t *testing.T, what string, n int64) {
	t.Helper()
	from := l.done.Load()
	eventually.Wait(t, churnWait, fmt.Sprintf("%d answers %s", n, what), func() bool { return l.done.Load() >= from+n })
}

// drain waits until no client has a request in flight that it sent before at.
func (l *load) drain(t *testing.T, at time.Time) {
	t.Helper()
	eventually.Wait(t, churnWait, "the requests sent before "+at.Format(time.StampMicro)+" answered", func() bool {
		for i := range l.started {
			if s := l.started[i].Load(); s != 0 && s <= at.UnixNano() {
				return false
			}
		}
		return true
	})
}

func (l *load) close() {
	close(l.stop)
	l.wg.Wait()
	l.client.CloseIdleConnections()
}

// away is a span in which an endpoint must be in no decision: from when the router was seen
// without it to when the test brought it back (zero: never).
type away struct {
	id       string
	from, to time.Time
}

// Pods coming and going under load: a router discovering its fleet from a (fake) cluster, in
// front of emulated engines, starts with no ready pod (and answers 503), then serves while pods
// turn unready and ready again, terminate and are replaced. Every request is answered 200 in
// whole; a request the router received after it dropped a pod never has that pod among its
// candidates, and the pod's engine receives nothing while it is out.
func TestPodsComingAndGoingUnderLoad(t *testing.T) {
	cs := fake.NewClientset()
	pods := cs.CoreV1().Pods("llm")
	ctx := context.Background()
	engines := map[string]*podEngine{}
	seed := uint64(1)
	addPod := func(name string, ready bool) {
		t.Helper()
		e := startPodEngine(t, name, seed)
		seed++
		engines[name] = e
		if _, err := pods.Create(ctx, enginePod(e, ready), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	edit := func(name string, f func(*corev1.Pod)) {
		t.Helper()
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		f(p)
		if _, err := pods.Update(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ready := func(on bool) func(*corev1.Pod) {
		status := corev1.ConditionFalse
		if on {
			status = corev1.ConditionTrue
		}
		return func(p *corev1.Pod) { p.Status.Conditions[0].Status = status }
	}

	cfg, err := config.Parse(t.TempDir()+"/router.yaml", []byte(discoveryYAML))
	if err != nil {
		t.Fatal(err)
	}
	addPod("vllm-a", false) // scheduled, not ready: the fleet is empty
	logs := &logbuf.Buffer{}
	r, err := Start(ctx, cfg, zerolog.New(logs), WithKubeClients(kube.Clients{Core: cs}))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	fakewatch.Wait(t, cs, "pods", churnWait) // the edits below must reach the informer
	inRouter := func(id string) bool {
		return slices.ContainsFunc(r.Server().EndpointGauges(), func(g metrics.EndpointGauges) bool { return g.ID == id })
	}
	waitIn := func(id string, in bool) time.Time {
		t.Helper()
		eventually.Wait(t, churnWait, fmt.Sprintf("%s in the router: %v", id, in), func() bool { return inRouter(id) == in })
		return time.Now()
	}

	// No ready pod: the documented refusal.
	l := &load{url: "http://" + r.Addr(), client: &http.Client{Timeout: churnWait}}
	if err := l.one(false); err == nil || !strings.Contains(err.Error(), "status 503") || !strings.Contains(err.Error(), "no endpoint is in the rotation (0 configured") {
		t.Fatalf("a request with no ready pod: %v; want a 503 saying no endpoint is in the rotation", err)
	}

	edit("vllm-a", ready(true))
	addPod("vllm-b", true)
	addPod("vllm-c", true)
	for _, id := range []string{"vllm-a", "vllm-b", "vllm-c"} {
		waitIn(id, true)
	}
	l = startLoad("http://"+r.Addr(), 4)
	defer func() {
		if l != nil {
			l.close()
		}
	}()
	l.progress(t, "with three pods", 20)

	var aways []away
	live := []string{"vllm-a", "vllm-b", "vllm-c"}
	for round := range 3 {
		// A pod turns unready: it leaves, its engine receives nothing more, it comes back.
		name := live[round%len(live)]
		edit(name, ready(false))
		gone := waitIn(name, false)
		l.drain(t, gone)
		e := engines[name]
		eventually.Wait(t, churnWait, name+"'s requests finished", func() bool { return e.active.Load() == 0 })
		held := e.received.Load()
		l.progress(t, "while "+name+" is unready", 20)
		if n := e.received.Load() - held; n != 0 {
			t.Errorf("round %d: %s received %d requests while unready", round, name, n)
		}
		back := time.Now()
		aways = append(aways, away{id: name, from: gone, to: back})
		edit(name, ready(true))
		waitIn(name, true)
		l.progress(t, "with "+name+" back", 20)

		// Another pod terminates: it leaves, its engine stops once its requests ended, its pod
		// is deleted and a new one replaces it.
		dying := live[(round+1)%len(live)]
		edit(dying, func(p *corev1.Pod) { now := metav1.Now(); p.DeletionTimestamp = &now })
		gone = waitIn(dying, false)
		aways = append(aways, away{id: dying, from: gone})
		l.drain(t, gone)
		eventually.Wait(t, churnWait, dying+"'s requests finished", func() bool { return engines[dying].active.Load() == 0 })
		engines[dying].stop()
		if err := pods.Delete(ctx, dying, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		fresh := fmt.Sprintf("vllm-r%d", round)
		addPod(fresh, true)
		waitIn(fresh, true)
		live[(round+1)%len(live)] = fresh
		l.progress(t, "with "+fresh+" added", 20)
	}
	l.close()
	failures, answered := l.failures, l.done.Load()
	l = nil

	if len(failures) > 0 {
		t.Errorf("%d of %d requests failed, first: %s", len(failures), answered, failures[0])
	}
	traces := r.Server().Decisions()
	if int64(len(traces)) < answered {
		t.Fatalf("%d decision traces for %d answered requests; the ring should keep them all", len(traces), answered)
	}
	decidedOn := map[string]int{}
	for _, tr := range traces {
		for _, c := range tr.Candidates {
			decidedOn[c.ID]++
			for _, a := range aways {
				if c.ID == a.id && tr.Now.After(a.from) && (a.to.IsZero() || tr.Now.Before(a.to)) {
					t.Errorf("request %s, received %v after %s left the router (%v), had it among its candidates",
						tr.RequestID, tr.Now.Sub(a.from), a.id, a.from.Format(time.StampMicro))
				}
			}
		}
	}
	for name, e := range engines {
		if e.received.Load() == 0 || decidedOn[name] == 0 {
			t.Errorf("pod %s took %d requests and was a candidate %d times; the load should reach every pod", name, e.received.Load(), decidedOn[name])
		}
	}
	if n := strings.Count(logs.String(), `"message":"endpoints discovered"`); n < 2*3+3 {
		t.Errorf("%d 'endpoints discovered' lines for at least %d changes", n, 2*3+3)
	}
	t.Logf("%d requests answered, %d decisions, %d pods", answered, len(traces), len(engines))
}

// A pod whose endpoint id is also a static endpoint's is left out; the static one stays and the
// other pods are served.
func TestDiscoveredIDClashesWithStatic(t *testing.T) {
	cs := fake.NewClientset()
	a, b := startPodEngine(t, "vllm-a", 1), startPodEngine(t, "vllm-b", 2)
	for _, e := range []*podEngine{a, b} {
		if _, err := cs.CoreV1().Pods("llm").Create(context.Background(), enginePod(e, true), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	yaml := strings.Replace(discoveryYAML, "endpoints:\n", fmt.Sprintf("endpoints:\n  static: [{id: vllm-a, address: \"127.0.0.1:%d\"}]\n", b.port), 1)
	cfg, err := config.Parse(t.TempDir()+"/router.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	logs := &logbuf.Buffer{}
	r, err := Start(context.Background(), cfg, zerolog.New(logs), WithKubeClients(kube.Clients{Core: cs}))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var got []string
	for _, g := range r.Server().EndpointGauges() {
		got = append(got, g.ID)
	}
	if want := []string{"vllm-a", "vllm-b"}; !slices.Equal(got, want) {
		t.Errorf("endpoints %v, want %v", got, want)
	}
	if !strings.Contains(logs.String(), "a discovered pod has the id of a static endpoint") {
		t.Errorf("the clash is not logged:\n%s", logs.String())
	}
}

// Discovery that cannot start fails the router's start, naming the section.
func TestDiscoveryWithoutClientsFailsStart(t *testing.T) {
	cfg, err := config.Parse(t.TempDir()+"/router.yaml", []byte(discoveryYAML))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Start(context.Background(), cfg, zerolog.Nop(), WithKubeClients(kube.Clients{}))
	if err == nil || !strings.Contains(err.Error(), "endpoints.kubernetes: kubernetes discovery: a clientset") {
		t.Fatalf("Start without a clientset: %v", err)
	}
}
