package kubeapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/foresight-router/foresight/internal/eventually"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// CRDTimeout bounds InstallCRDs' wait for a CRD to be established and served.
const CRDTimeout = 30 * time.Second

// Create creates, as the admin and with opts (a server-side dry run: DryRun: []string{"All"}),
// every object of docs, a stream of YAML or JSON documents, in their order, as kubectl create -f
// does: the kind's resource found through discovery, a namespaced object without a namespace
// created in "default". It returns the objects as the API server answered, and the failures,
// joined, each naming its object: it creates all it can.
func (s *Server) Create(ctx context.Context, docs []byte, opts metav1.CreateOptions) ([]*unstructured.Unstructured, error) {
	dyn, err := dynamic.NewForConfig(s.Config)
	if err != nil {
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(s.Config)
	if err != nil {
		return nil, err
	}
	// A mapper per call: the kinds of CRDs created since the last call are found.
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(docs), 4096)
	var (
		created []*unstructured.Unstructured
		errs    []error
	)
	for i := 0; ; i++ {
		var obj map[string]any
		if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return created, errors.Join(append(errs, fmt.Errorf("document %d: %w", i, err))...)
		}
		if len(obj) == 0 { // comments only
			continue
		}
		u := &unstructured.Unstructured{Object: obj}
		what := fmt.Sprintf("%s %q", u.GetKind(), u.GetName())
		gvk := u.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", what, err))
			continue
		}
		var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if m.Scope.Name() == apimeta.RESTScopeNameNamespace {
			ns := u.GetNamespace()
			if ns == "" {
				ns = metav1.NamespaceDefault
			}
			what += " in namespace " + ns
			ri = dyn.Resource(m.Resource).Namespace(ns)
		}
		out, err := ri.Create(ctx, u, opts)
		if err != nil {
			errs = append(errs, fmt.Errorf("creating %s: %w", what, err))
			continue
		}
		created = append(created, out)
	}
	return created, errors.Join(errs...)
}

// crdResource is the API resource of CustomResourceDefinitions.
var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// InstallCRDs creates the CustomResourceDefinitions of docs (YAML or JSON documents) and waits,
// up to CRDTimeout, until each one is established and discovery lists its resource in each of
// its served versions, as a client that asks discovery first needs. It fails t otherwise.
func (s *Server) InstallCRDs(t testing.TB, docs []byte) {
	t.Helper()
	created, err := s.Create(t.Context(), docs, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range created {
		if crd.GetKind() != "CustomResourceDefinition" {
			t.Fatalf("InstallCRDs: %s %q is not a CustomResourceDefinition", crd.GetKind(), crd.GetName())
		}
		name := crd.GetName()
		eventually.Wait(t, CRDTimeout, "CRD "+name+" established", func() bool {
			u, err := dyn.Resource(crdResource).Get(t.Context(), name, metav1.GetOptions{})
			return err == nil && hasCondition(u, "Established")
		})
		group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
		plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		for _, v := range versions {
			v, _ := v.(map[string]any)
			if served, _ := v["served"].(bool); !served {
				continue
			}
			gv := group + "/" + fmt.Sprint(v["name"])
			eventually.Wait(t, CRDTimeout, "discovery serving "+plural+" in "+gv, func() bool {
				list, err := dc.ServerResourcesForGroupVersion(gv)
				return err == nil && slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == plural })
			})
		}
	}
}

// hasCondition reports whether u's status.conditions hold typ with status True.
func hasCondition(u *unstructured.Unstructured, typ string) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	return slices.ContainsFunc(conds, func(c any) bool {
		m, _ := c.(map[string]any)
		return m["type"] == typ && m["status"] == "True"
	})
}

// Kubeconfig writes a kubeconfig file that reaches the server as the admin, as
// clientcmd.BuildConfigFromFlags and kubectl read it, and returns its path (in a temporary folder
// of t).
func (s *Server) Kubeconfig(t testing.TB) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["kubeapi"] = &clientcmdapi.Cluster{Server: s.Config.Host, CertificateAuthorityData: s.pki.caCert}
	cfg.AuthInfos[AdminUser] = &clientcmdapi.AuthInfo{ClientCertificateData: s.pki.clientCert, ClientKeyData: s.pki.clientKey}
	cfg.Contexts["kubeapi"] = &clientcmdapi.Context{Cluster: "kubeapi", AuthInfo: AdminUser}
	cfg.CurrentContext = "kubeapi"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}
