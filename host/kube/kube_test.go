package kube

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
)

// The namespace defaults to the service account's, else "default".
func TestNamespaceDefault(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	for _, tt := range []struct{ name, file, want string }{
		{"service account", write("sa", "llm-prod\n"), "llm-prod"},
		{"no file", filepath.Join(dir, "absent"), "default"},
		{"empty file", write("empty", " \n"), "default"},
	} {
		if got := namespaceFrom(tt.file); got != tt.want {
			t.Errorf("%s: namespaceFrom = %q, want %q", tt.name, got, tt.want)
		}
	}
	w, err := New(Config{Selector: vllm, TargetPort: intstr.FromInt32(8000)}, Clients{Core: fake.NewClientset()}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := w.cfg.Namespace, namespaceFrom(ServiceAccountNamespaceFile); got != want {
		t.Errorf("the namespace watched is %q without one configured, want %q", got, want)
	}
}

func TestConfigErrors(t *testing.T) {
	core := fake.NewClientset()
	for _, tt := range []struct {
		name string
		cfg  Config
		c    Clients
		want string
	}{
		{"neither", Config{Namespace: ns}, Clients{Core: core}, "needs an InferencePool or a selector; got neither"},
		{"both", Config{InferencePool: "p", Selector: vllm}, Clients{Core: core, Dynamic: fakeDynamic()}, "an InferencePool or a selector, not both"},
		{"pool with a port", Config{InferencePool: "p", TargetPort: intstr.FromString("http")}, Clients{Core: core, Dynamic: fakeDynamic()}, "names its own ports"},
		{"selector without a port", Config{Selector: vllm}, Clients{Core: core}, "a selector needs a target port"},
		{"port out of range", Config{Selector: vllm, TargetPort: intstr.FromInt32(70000)}, Clients{Core: core}, "target port 70000; accepted: 1 to 65535"},
		{"pool without a dynamic client", Config{InferencePool: "p"}, Clients{Core: core}, "a dynamic client"},
	} {
		_, err := New(tt.cfg, tt.c, zerolog.Nop())
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: New = %v, want an error containing %q", tt.name, err, tt.want)
		}
	}
}
