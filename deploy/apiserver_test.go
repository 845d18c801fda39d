package deploy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/foresight-router/foresight/host/endpoints"
	"github.com/foresight-router/foresight/host/kube"
	"github.com/foresight-router/foresight/internal/eventually"
	"github.com/foresight-router/foresight/internal/kubeapi"
	"github.com/rs/zerolog"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	sigsyaml "sigs.k8s.io/yaml"
)

// The CRDs of the Gateway API Inference Extension that host/kube's tests install (minimal ones,
// written for the tests).
var inferenceCRDs = []string{"../host/kube/testdata/inferencepool-crd.yaml", "../host/kube/testdata/objective-rewrite-crds.yaml"}

// TestChartOnAPIServer creates the chart's objects on a real kube-apiserver (internal/kubeapi)
// with the InferencePool CRD installed: every value set's rendering with a server-side dry run
// and strict field validation, so that what the API server would refuse (a field it does not know,
// an invalid name, label, quantity or probe) fails as `kubectl apply` would. The HTTPRoute is left
// out: no Gateway API CRD is installed (gatewayapi_test.go checks it against its reference). Then
// the inferencepool set is created for real and a watcher runs as the Deployment's service
// account: the chart's Role and RoleBinding must grant what endpoint discovery reads, and the
// InferencePool must pick the model server pods on their port.
func TestChartOnAPIServer(t *testing.T) {
	s := kubeapi.Start(t)
	for _, f := range inferenceCRDs {
		crd, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s.InstallCRDs(t, crd)
	}
	cs := s.Clientset(t)
	if _, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	strict := metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict}
	dryRun := metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict, DryRun: []string{metav1.DryRunAll}}
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			docs := withoutKind(t, render(t, valuesArgs(vs)...), httpRouteKind.Kind)
			created, err := s.Create(t.Context(), docs, dryRun)
			if err != nil {
				t.Fatalf("the API server refuses the chart's objects:\n%v", err)
			}
			if len(created) == 0 {
				t.Fatal("the rendering holds no object")
			}
		})
	}

	vs := valueSets[1]
	if vs.name != "inferencepool" {
		t.Fatalf("value set %q; want inferencepool, whose pool the service account's watcher follows", vs.name)
	}
	data := render(t, valuesArgs(vs)...)
	r := decodeRendering(t, data)
	if _, err := s.Create(t.Context(), withoutKind(t, data, httpRouteKind.Kind), strict); err != nil {
		t.Fatalf("creating the chart's objects:\n%v", err)
	}
	port := r.pool.Spec.TargetPorts[0].Number
	pods := cs.CoreV1().Pods(namespace)
	pod, err := pods.Create(t.Context(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "model-server-0", Namespace: namespace, Labels: vs.modelLabels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "vllm", Image: "vllm/vllm-openai",
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: port}}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// What a kubelet would report once the model server's readiness probe passes.
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1", PodIPs: []corev1.PodIP{{IP: "10.0.0.1"}},
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	if _, err := pods.UpdateStatus(t.Context(), pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	sa := r.deployment.Spec.Template.Spec.ServiceAccountName
	clients := impersonated(t, s, "system:serviceaccount:"+namespace+":"+sa)
	w, err := kube.New(kube.Config{Namespace: namespace, InferencePool: r.pool.Name, SyncTimeout: 20 * time.Second}, clients, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	var last lastList
	done := make(chan error, 1)
	go func() { done <- w.Run(t.Context(), last.set) }()
	t.Cleanup(func() { <-done }) // t.Context() ends before the cleanups run
	if err := w.WaitSynced(t.Context()); err != nil {
		t.Fatalf("endpoint discovery as service account %s, with the chart's Role:\n%v", sa, err)
	}
	want := "model-server-0=" + net.JoinHostPort("10.0.0.1", strconv.Itoa(int(port)))
	eventually.Wait(t, 10*time.Second, "the model server as the pool's endpoint: "+want, func() bool { return last.get() == want })
}

// valuesArgs are the helm template arguments of a value set.
func valuesArgs(vs valueSet) []string {
	if vs.file == "" {
		return nil
	}
	return []string{"--values", filepath.Join(chartDir, vs.file)}
}

// withoutKind returns the YAML documents of data less those of kind.
func withoutKind(t *testing.T, data []byte, kind string) []byte {
	t.Helper()
	var out bytes.Buffer
	docs := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := docs.Read()
		if errors.Is(err, io.EOF) {
			return out.Bytes()
		}
		if err != nil {
			t.Fatal(err)
		}
		js, err := sigsyaml.YAMLToJSON(doc)
		if err != nil {
			t.Fatal(err)
		}
		var tm metav1.TypeMeta
		if err := json.Unmarshal(js, &tm); err != nil {
			t.Fatal(err)
		}
		if tm.Kind == kind {
			continue
		}
		out.WriteString("---\n")
		out.Write(doc)
	}
}

// impersonated returns endpoint discovery's clients acting as user.
func impersonated(t *testing.T, s *kubeapi.Server, user string) kube.Clients {
	t.Helper()
	cfg := s.Impersonating(user)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return kube.Clients{Core: cs, Dynamic: dyn}
}

// lastList keeps the last list a watcher delivered, as "id=address" words.
type lastList struct {
	mu   sync.Mutex
	list string
}

func (l *lastList) set(eps []endpoints.Endpoint) {
	words := make([]string, len(eps))
	for i, e := range eps {
		words[i] = e.ID + "=" + e.Address
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.list = strings.Join(words, " ")
}

func (l *lastList) get() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.list
}
