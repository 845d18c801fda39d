package kube

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/foresight-router/foresight/internal/kubeapi"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// TestAPIServer runs the watcher against a real kube-apiserver over a real etcd
// (internal/kubeapi), beside the tests over client-go's fake clientsets: real lists and watches
// (resource versions, bookmarks, the watch cache), real JSON (a CRD's integers), real validation,
// real RBAC answers. One server serves the subtests, each in its own namespace; they run in order
// (InferencePool before the objective CRDs are installed), and each also runs alone (-run
// TestAPIServer/NAME). No kubelet runs: a pod's IP and Ready condition are what the test writes
// with UpdateStatus, and a pod bound to a node stays terminating after a graceful delete until
// the test deletes it with no grace period.
func TestAPIServer(t *testing.T) {
	s := kubeapi.Start(t)
	t.Run("PodChurn", func(t *testing.T) { apiPodChurn(t, s) })
	t.Run("NamedTargetPort", func(t *testing.T) { apiNamedTargetPort(t, s) })
	t.Run("InferencePool", func(t *testing.T) { apiInferencePool(t, s) })
	t.Run("ObjectivesAndRewrites", func(t *testing.T) { apiObjectivesAndRewrites(t, s) })
	t.Run("RBAC", func(t *testing.T) { apiRBAC(t, s) })
}

// cluster is one subtest's namespace on the server, with the admin's clients.
type cluster struct {
	t   *testing.T
	ns  string
	cs  kubernetes.Interface
	dyn dynamic.Interface
}

// newCluster creates the namespace ns and returns clients of the admin (the package's Clients,
// as a router's would be made from the server's address and credentials).
func newCluster(t *testing.T, s *kubeapi.Server, ns string) *cluster {
	t.Helper()
	cs, err := kubernetes.NewForConfig(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return &cluster{t: t, ns: ns, cs: cs, dyn: dyn}
}

func (c *cluster) clients() Clients { return Clients{Core: c.cs, Dynamic: c.dyn} }

// pod creates a pod of c's namespace with one container serving ports, then, as a kubelet
// would, writes its status: its IP (none when ip is empty) and its Ready condition.
func (c *cluster) pod(name, ip string, ready bool, labels map[string]string, ports ...corev1.ContainerPort) {
	c.t.Helper()
	p := testPod(name, ip, ready, labels, ports...)
	p.Namespace = c.ns
	p.Spec.Containers[0].Image = "vllm/vllm-openai"
	status := p.Status
	created, err := c.cs.CoreV1().Pods(c.ns).Create(context.Background(), p, metav1.CreateOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	if created.Status.PodIP != "" || len(created.Status.Conditions) > 0 {
		c.t.Fatalf("pod %s was created with a status (%+v): the API server should have dropped it", name, created.Status)
	}
	c.status(name, func(s *corev1.PodStatus) { *s = status; setIP(s, ip) })
}

// setIP sets a pod's IP as a kubelet reports it: podIP and the podIPs list.
func setIP(s *corev1.PodStatus, ip string) {
	s.PodIP, s.PodIPs = ip, nil
	if ip != "" {
		s.PodIPs = []corev1.PodIP{{IP: ip}}
	}
}

// status applies f to the status of the pod called name and writes it with UpdateStatus.
func (c *cluster) status(name string, f func(*corev1.PodStatus)) {
	c.t.Helper()
	c.edit(name, func(p *corev1.Pod) { f(&p.Status) }, true)
}

// edit applies f to the pod called name and writes it back: with UpdateStatus when status, else
// with Update (its spec and metadata).
func (c *cluster) edit(name string, f func(*corev1.Pod), status bool) {
	c.t.Helper()
	pods := c.cs.CoreV1().Pods(c.ns)
	ctx := context.Background()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		f(p)
		if status {
			_, err = pods.UpdateStatus(ctx, p, metav1.UpdateOptions{})
		} else {
			_, err = pods.Update(ctx, p, metav1.UpdateOptions{})
		}
		return err
	})
	if err != nil {
		c.t.Fatalf("writing pod %s: %v", name, err)
	}
}

// remove deletes the pod called name: with the default grace period (a pod bound to a node then
// stays, terminating, until its kubelet, or the test with grace 0, deletes it), or at once.
func (c *cluster) remove(name string, graceful bool) {
	c.t.Helper()
	opts := metav1.DeleteOptions{}
	if !graceful {
		var zero int64
		opts.GracePeriodSeconds = &zero
	}
	if err := c.cs.CoreV1().Pods(c.ns).Delete(context.Background(), name, opts); err != nil {
		c.t.Fatalf("deleting pod %s: %v", name, err)
	}
}

// Pods of a selector come and go with their readiness, their termination, their deletion, their
// labels and their IP (given late, IPv6); pods of other labels or namespaces never count; a burst of pods created, made ready,
// made unready and deleted is followed to its last state. The clients are the package's own,
// from a kubeconfig file.
func apiPodChurn(t *testing.T, s *kubeapi.Server) {
	c := newCluster(t, s, "churn")
	clients, err := NewClients(s.Kubeconfig(t))
	if err != nil {
		t.Fatal(err)
	}
	elsewhere := newCluster(t, s, "elsewhere")
	elsewhere.pod("other-ns", "10.0.9.9", true, vllm)
	c.pod("a", "10.0.0.1", true, vllm)
	c.pod("b", "10.0.0.2", false, vllm) // not ready yet
	c.pod("c", "10.0.0.3", true, map[string]string{"app": "other"})
	c.pod("pending", "", true, vllm) // no IP yet
	rec, _ := run(t, Config{Namespace: c.ns, Selector: vllm, TargetPort: intstr.FromInt32(8000)}, clients)
	rec.wait(t, "initial", "a=10.0.0.1:8000")

	c.pod("d", "10.0.0.4", true, map[string]string{"app": "vllm", "gpu": "h100"})
	rec.wait(t, "a ready pod added", "a=10.0.0.1:8000 d=10.0.0.4:8000")
	c.status("b", func(s *corev1.PodStatus) { setReadyStatus(s, true) })
	rec.wait(t, "b became ready", "a=10.0.0.1:8000 b=10.0.0.2:8000 d=10.0.0.4:8000")
	c.status("a", func(s *corev1.PodStatus) { setReadyStatus(s, false) })
	rec.wait(t, "a became unready", "b=10.0.0.2:8000 d=10.0.0.4:8000")

	// A pod bound to a node terminates gracefully: the API server sets its deletionTimestamp
	// and keeps it, still Ready, until its kubelet would delete it.
	c.pod("e", "10.0.0.5", true, vllm)
	if err := c.cs.CoreV1().Pods(c.ns).Bind(t.Context(), &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "e"},
		Target: corev1.ObjectReference{Kind: "Node", Name: "node-1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, "e added", "b=10.0.0.2:8000 d=10.0.0.4:8000 e=10.0.0.5:8000")
	c.remove("e", true)
	rec.wait(t, "e terminating", "b=10.0.0.2:8000 d=10.0.0.4:8000")
	p, err := c.cs.CoreV1().Pods(c.ns).Get(t.Context(), "e", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("e after a graceful delete: %v; want it kept, terminating", err)
	}
	stillReady := p.DeletionTimestamp != nil && slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
		return c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
	})
	if !stillReady {
		t.Fatalf("e after a graceful delete: deletionTimestamp %v, conditions %v; want it terminating and still Ready",
			p.DeletionTimestamp, p.Status.Conditions)
	}
	c.remove("e", false)
	c.remove("d", false)
	rec.wait(t, "d deleted", "b=10.0.0.2:8000")

	c.edit("c", func(p *corev1.Pod) { p.Labels = map[string]string{"app": "vllm", "role": "decode"} }, false)
	rec.wait(t, "c relabelled into the selector", "b=10.0.0.2:8000 c=10.0.0.3:8000")
	c.status("pending", func(s *corev1.PodStatus) { setIP(s, "fd00::7") })
	rec.wait(t, "an IPv6 pod got its IP", "b=10.0.0.2:8000 c=10.0.0.3:8000 pending=[fd00::7]:8000")

	// Churn: many pods at once, each written several times, with no wait between the writes.
	const n = 24
	all := []string{"b=10.0.0.2:8000", "c=10.0.0.3:8000", "pending=[fd00::7]:8000"}
	var burst []string
	for i := range n {
		name := fmt.Sprintf("burst-%02d", i)
		c.pod(name, fmt.Sprintf("10.1.0.%d", i+1), false, vllm)
		burst = append(burst, fmt.Sprintf("%s=10.1.0.%d:8000", name, i+1))
	}
	for i := range n {
		c.status(fmt.Sprintf("burst-%02d", i), func(s *corev1.PodStatus) { setReadyStatus(s, true) })
	}
	rec.wait(t, "the burst ready", sorted(append(all, burst...)))
	var left []string
	for i := range n {
		name := fmt.Sprintf("burst-%02d", i)
		switch i % 3 {
		case 0:
			c.remove(name, false)
		case 1:
			c.status(name, func(s *corev1.PodStatus) { setReadyStatus(s, false) })
		default:
			left = append(left, burst[i])
		}
	}
	for _, name := range []string{"b", "c", "pending"} {
		c.remove(name, false)
	}
	rec.wait(t, "the burst thinned and the others deleted", sorted(left))

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

// sorted shows "id=address" words as a list of endpoints shows: sorted by ID.
func sorted(words []string) string {
	return strings.Join(slices.Sorted(slices.Values(words)), " ")
}

// setReadyStatus sets a status's Ready condition, as setReady does a pod's.
func setReadyStatus(s *corev1.PodStatus, ready bool) {
	p := corev1.Pod{Status: *s}
	setReady(&p, ready)
	*s = p.Status
}

// A named targetPort resolves per pod from the container ports the API server stored; a ready
// pod without it is no endpoint and is logged once. A pod's containers cannot change, so the
// port comes with a new pod of the same name.
func apiNamedTargetPort(t *testing.T, s *kubeapi.Server) {
	c := newCluster(t, s, "named")
	http := func(n int32) corev1.ContainerPort { return corev1.ContainerPort{Name: "http", ContainerPort: n} }
	metrics := corev1.ContainerPort{Name: "metrics", ContainerPort: 9400}
	c.pod("a", "10.0.0.1", true, vllm, metrics, http(8000))
	c.pod("b", "10.0.0.2", true, vllm, http(8001))
	c.pod("c", "10.0.0.3", true, vllm, metrics)
	rec, logs := run(t, Config{Namespace: c.ns, Selector: vllm, TargetPort: intstr.FromString("http")}, c.clients())
	rec.wait(t, "initial", "a=10.0.0.1:8000 b=10.0.0.2:8001")
	const warning = "the pod has no container port of that name"
	c.edit("c", func(p *corev1.Pod) { p.Labels["rev"] = "2" }, false) // an event that changes nothing
	c.status("b", func(s *corev1.PodStatus) { setReadyStatus(s, false) })
	rec.wait(t, "b unready", "a=10.0.0.1:8000")
	c.remove("c", false)
	c.pod("c", "10.0.0.3", true, vllm, metrics, http(8002))
	rec.wait(t, "c again, with the port", "a=10.0.0.1:8000 c=10.0.0.3:8002")
	if n := strings.Count(logs.String(), warning); n != 1 {
		t.Errorf("c's missing port was logged %d times, want once:\n%s", n, logs.String())
	}
}

// readTestdata returns the file testdata/name, failing t when it cannot.
func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
