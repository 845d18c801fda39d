// Package kube discovers the live router's endpoints in a Kubernetes cluster: the ready pods of a
// Gateway API Inference Extension InferencePool, or of a label selector, each served on its target
// port(s). It watches pods (and the pool) with client-go informers and hands the router the full
// list whenever it changes, so a pod that stops being ready leaves the rotation at the next event
// rather than after the scrapes that would have found it failing. With a pool it also follows the
// pool's InferenceObjectives (priorities) and InferenceModelRewrites (model rewrites) when the
// cluster serves their CRDs (crd.go). It knows nothing of the router: host/router applies the
// lists it delivers and reads the priorities and rewrites.
package kube

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// PoolResource is the InferencePool's API resource (Gateway API Inference Extension v1). Its Go
// module is not a dependency: the pool is read through the dynamic client as unstructured data.
var PoolResource = schema.GroupVersionResource{Group: "inference.networking.k8s.io", Version: "v1", Resource: "inferencepools"}

// ServiceAccountNamespaceFile holds the namespace of the pod the router runs in; it is the
// default namespace when Config.Namespace is empty.
const ServiceAccountNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// DefaultNamespace is the namespace outside a pod (no ServiceAccountNamespaceFile), as kubectl's.
const DefaultNamespace = "default"

// DefaultSyncTimeout bounds WaitSynced: long enough for a list of a large namespace on a busy API
// server, short enough that a router without the RBAC it needs fails its start visibly.
const DefaultSyncTimeout = 30 * time.Second

// MaxTargetPorts is the most ports an InferencePool names (its CRD's maxItems).
const MaxTargetPorts = 8

// Config says what to watch: an InferencePool, or a Selector with a TargetPort.
type Config struct {
	// Namespace holds the pods and the pool (default: ServiceAccountNamespaceFile's content,
	// else DefaultNamespace).
	Namespace string
	// InferencePool names the pool whose spec.selector.matchLabels picks the pods and whose
	// spec.targetPorts are the ports every ready pod serves on; its changes are followed.
	InferencePool string
	// Selector picks the pods by label (matchLabels), instead of a pool.
	Selector map[string]string
	// TargetPort is the pods' port with a Selector: a number, or the name of a container port
	// (spec.containers[].ports[].name) resolved per pod, as a Service's targetPort is.
	TargetPort intstr.IntOrString
	// KVEventsPort, when set, is the port on which every pod's engine publishes its KV-cache
	// events (a number, or a container port's name): the endpoint's KVEvents is
	// tcp://podIP:port. A pod's KVEventsAnnotation overrides it (kvEventsOf).
	KVEventsPort intstr.IntOrString
	// SyncTimeout bounds WaitSynced (default DefaultSyncTimeout).
	SyncTimeout time.Duration
}

// withDefaults returns c with its defaults applied, or an error for a config the router's
// validation would have refused (for callers other than host/config).
func (c Config) withDefaults() (Config, error) {
	if c.Namespace == "" {
		c.Namespace = namespaceFrom(ServiceAccountNamespaceFile)
	}
	if c.SyncTimeout <= 0 {
		c.SyncTimeout = DefaultSyncTimeout
	}
	c.Selector = maps.Clone(c.Selector)
	switch {
	case c.InferencePool == "" && len(c.Selector) == 0:
		return c, errors.New("kubernetes discovery needs an InferencePool or a selector; got neither")
	case c.InferencePool != "" && len(c.Selector) > 0:
		return c, errors.New("kubernetes discovery takes an InferencePool or a selector, not both")
	case c.InferencePool != "" && !targetPortZero(c.TargetPort):
		return c, errors.New("kubernetes discovery: an InferencePool names its own ports (spec.targetPorts); a target port is refused with it")
	case c.InferencePool == "" && targetPortZero(c.TargetPort):
		return c, errors.New("kubernetes discovery: a selector needs a target port (a number or a container port's name)")
	case c.InferencePool == "" && c.TargetPort.Type == intstr.Int && (c.TargetPort.IntVal < 1 || c.TargetPort.IntVal > 65535):
		return c, fmt.Errorf("kubernetes discovery: target port %d; accepted: 1 to 65535", c.TargetPort.IntVal)
	}
	return c, nil
}

func targetPortZero(p intstr.IntOrString) bool {
	return (p.Type == intstr.Int && p.IntVal == 0) || (p.Type == intstr.String && p.StrVal == "")
}

// namespaceFrom returns the namespace written in file (a service account's), or DefaultNamespace
// when the file is absent or empty.
func namespaceFrom(file string) string {
	b, err := os.ReadFile(file)
	if ns := strings.TrimSpace(string(b)); err == nil && ns != "" {
		return ns
	}
	return DefaultNamespace
}

// source describes what c watches, for logs and errors: `inferencePool "x"` or `selector app=x,b=y`.
func (c Config) source() string {
	if c.InferencePool != "" {
		return fmt.Sprintf("inferencePool %q", c.InferencePool)
	}
	return "selector " + selectorString(c.Selector)
}

// selectorString writes matchLabels as k=v pairs sorted by key, the form kubectl -l takes.
func selectorString(m map[string]string) string {
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m[k]
	}
	return strings.Join(parts, ",")
}
