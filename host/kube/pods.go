package kube

import (
	"cmp"
	"maps"
	"net"
	"slices"
	"strconv"

	"github.com/foresight-router/foresight/host/endpoints"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// target is what turns pods into endpoints: the labels that pick them and the ports each serves.
type target struct {
	matchLabels map[string]string
	// ports are numbers (a pool's targetPorts, or a selector's numeric targetPort) or one name.
	ports []intstr.IntOrString
	// kvPort is Config.KVEventsPort (zero: none).
	kvPort intstr.IntOrString
}

// The annotations that name a pod's KV-cache event publisher and its replay socket: a port
// (tcp://podIP:port) or a whole address (tcp://host:port, ipc://path).
const (
	KVEventsAnnotation       = "foresight.io/kv-events"
	KVEventsReplayAnnotation = "foresight.io/kv-events-replay"
)

// kvEventsOf returns the KV-cache event publisher and replay addresses of pod p: its annotations
// when it has them, else port kvPort on its IP (none when kvPort is zero or p has no container
// port of that name). An annotation that is not a port is taken as an address as it is: one
// that is not valid reaches the router, which logs that it cannot read the endpoint's events.
func kvEventsOf(p *corev1.Pod, kvPort intstr.IntOrString) (pub, replay string) {
	addr := func(v string) string {
		if n, err := strconv.Atoi(v); err == nil && n > 0 && n < 65536 {
			return "tcp://" + net.JoinHostPort(p.Status.PodIP, v)
		}
		return v
	}
	if v, ok := p.Annotations[KVEventsAnnotation]; ok {
		pub = addr(v)
	} else if kvPort != (intstr.IntOrString{}) {
		if port, ok := resolvePort(p, kvPort); ok {
			pub = "tcp://" + net.JoinHostPort(p.Status.PodIP, strconv.Itoa(int(port)))
		}
	}
	if v, ok := p.Annotations[KVEventsReplayAnnotation]; ok && pub != "" {
		replay = addr(v)
	}
	return pub, replay
}

// endpointsOf returns the endpoints of the pods t picks that are ready, sorted by ID, and the
// names of the ready pods left out for lacking t's named port. A pod serves on each of t's ports:
// its ID is the pod's name, followed by ":port" when there are several; its address podIP:port;
// its labels the pod's.
func endpointsOf(pods []*corev1.Pod, t target) (eps []endpoints.Endpoint, noPort []string) {
	sel := labels.SelectorFromSet(t.matchLabels)
	for _, p := range pods {
		if !sel.Matches(labels.Set(p.Labels)) || !ready(p) {
			continue
		}
		for _, tp := range t.ports {
			port, ok := resolvePort(p, tp)
			if !ok {
				noPort = append(noPort, p.Name)
				continue
			}
			id := p.Name
			if len(t.ports) > 1 {
				id += ":" + strconv.Itoa(int(port))
			}
			e := endpoints.Endpoint{ID: id, Address: net.JoinHostPort(p.Status.PodIP, strconv.Itoa(int(port))),
				Labels: maps.Clone(p.Labels)}
			e.KVEvents, e.KVEventsReplay = kvEventsOf(p, t.kvPort)
			eps = append(eps, e)
		}
	}
	slices.SortFunc(eps, func(a, b endpoints.Endpoint) int { return cmp.Compare(a.ID, b.ID) })
	return eps, noPort
}

// ready reports whether p may take requests: it has an IP, its Ready condition is True (its
// readiness probe passes), and it is not terminating. A terminating pod may still report Ready
// until its containers stop; it leaves at once, as a Service's endpoints do.
func ready(p *corev1.Pod) bool {
	if p.Status.PodIP == "" || p.DeletionTimestamp != nil {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// resolvePort returns tp's number on p: tp itself when a number, else the port of p's container
// port named tp (spec.containers[].ports[].name), as a Service resolves a named targetPort.
func resolvePort(p *corev1.Pod, tp intstr.IntOrString) (int32, bool) {
	if tp.Type == intstr.Int {
		return tp.IntVal, true
	}
	for _, c := range p.Spec.Containers {
		for _, cp := range c.Ports {
			if cp.Name == tp.StrVal {
				return cp.ContainerPort, true
			}
		}
	}
	return 0, false
}

// sameList reports whether a and b list the same endpoints in the same order.
func sameList(a, b []endpoints.Endpoint) bool {
	return slices.EqualFunc(a, b, func(x, y endpoints.Endpoint) bool {
		return x.ID == y.ID && x.Address == y.Address && maps.Equal(x.Labels, y.Labels) &&
			x.KVEvents == y.KVEvents && x.KVEventsReplay == y.KVEventsReplay
	})
}
