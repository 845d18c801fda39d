package kubeapi

import (
	"errors"
	"strings"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// The CRD of TestServer: a namespaced kind with an integer field, served in one version.
const widgetCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.test}
spec:
  group: example.test
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                size: {type: integer, minimum: 1}
`

// A server starts, serves the admin (client certificate, from Config and from Kubeconfig),
// refuses an impersonated service account what RBAC does not grant it, installs a CRD and
// creates objects (a dry run persists nothing); its processes are gone once its test ended.
func TestServer(t *testing.T) {
	var pids []int
	t.Run("running", func(t *testing.T) {
		s := Start(t)
		for _, p := range s.procs {
			pids = append(pids, p.cmd.Process.Pid)
		}
		if len(pids) != 2 {
			t.Fatalf("%d processes started, want 2 (etcd, kube-apiserver)", len(pids))
		}
		ctx := t.Context()
		cs := s.Clientset(t)
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "t"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}

		cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig(t))
		if err != nil {
			t.Fatal(err)
		}
		byFile, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := byFile.CoreV1().Namespaces().Get(ctx, "t", metav1.GetOptions{}); err != nil {
			t.Errorf("through the kubeconfig file: %v", err)
		}

		sa, err := kubernetes.NewForConfig(s.Impersonating("system:serviceaccount:t:nobody"))
		if err != nil {
			t.Fatal(err)
		}
		_, err = sa.CoreV1().Pods("t").List(ctx, metav1.ListOptions{})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `"system:serviceaccount:t:nobody" cannot list resource "pods"`) {
			t.Errorf("a service account without a role lists pods: %v; want Forbidden", err)
		}

		s.InstallCRDs(t, []byte(widgetCRD))
		widgets := schema.GroupVersionResource{Group: "example.test", Version: "v1", Resource: "widgets"}
		const docs = "apiVersion: example.test/v1\nkind: Widget\nmetadata: {name: dry, namespace: t}\nspec: {size: 1}\n" +
			"---\n# a comment only\n---\n" +
			"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: dry, namespace: t}\ndata: {a: b}\n"
		created, err := s.Create(ctx, []byte(docs), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil || len(created) != 2 {
			t.Fatalf("dry run: %d objects, %v; want 2", len(created), err)
		}
		dyn, err := dynamic.NewForConfig(s.Config)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := dyn.Resource(widgets).Namespace("t").Get(ctx, "dry", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("a dry run's Widget: %v; want NotFound", err)
		}
		if _, err := s.Create(ctx, []byte(strings.ReplaceAll(docs, "dry", "real")), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := dyn.Resource(widgets).Namespace("t").Get(ctx, "real", metav1.GetOptions{}); err != nil {
			t.Errorf("the created Widget: %v", err)
		}

		// What the API server refuses is reported per object, and the others are created.
		bad := "apiVersion: example.test/v1\nkind: Widget\nmetadata: {name: zero, namespace: t}\nspec: {size: 0}\n---\n" +
			"apiVersion: example.test/v1\nkind: Gadget\nmetadata: {name: g, namespace: t}\n---\n" +
			"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fine, namespace: t}\n"
		created, err = s.Create(ctx, []byte(bad), metav1.CreateOptions{})
		for _, want := range []string{`creating Widget "zero" in namespace t: `, `spec.size`, `Gadget "g": `} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("Create of refused objects: %v; want it to contain %q", err, want)
			}
		}
		if len(created) != 1 || created[0].GetName() != "fine" {
			t.Errorf("Create of refused objects created %d objects; want the ConfigMap alone", len(created))
		}
	})
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("process %d after its test's cleanup: %v; want it gone", pid, err)
		}
	}
}
