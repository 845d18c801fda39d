package router

import (
	"context"
	"fmt"
	"slices"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/endpoints"
	"github.com/foresight-router/foresight/host/kube"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Option changes how Start builds a router.
type Option func(*options)

type options struct {
	kube *kube.Clients // nil: the cluster's API server (kube.NewClients)
}

// WithKubeClients makes endpoints.kubernetes read the cluster through c instead of connecting to
// the API server (the in-cluster configuration or endpoints.kubernetes.kubeconfig): tests pass
// client-go's fake clientsets, an embedder its own clients.
func WithKubeClients(c kube.Clients) Option { return func(o *options) { o.kube = &c } }

// newWatcher returns the watcher of endpoints.kubernetes, nil without the section. It reads
// nothing: discover runs it, after the proxy that reads its objectives and model rewrites was
// built.
func (r *Router) newWatcher(cfg *config.Config, opts []Option) (*kube.Watcher, error) {
	k := cfg.Endpoints.Kubernetes
	if k == nil {
		return nil, nil
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	var clients kube.Clients
	if o.kube != nil {
		clients = *o.kube
	} else {
		var err error
		if clients, err = kube.NewClients(cfg.KubeconfigFile()); err != nil {
			return nil, fmt.Errorf("%s: endpoints.kubernetes: %w", cfg.File(), err)
		}
	}
	w, err := kube.New(kubeConfig(k), clients, r.log)
	if err != nil {
		return nil, fmt.Errorf("%s: endpoints.kubernetes: %w", cfg.File(), err)
	}
	return w, nil
}

// discover runs w (nil: no endpoints.kubernetes): it waits (at most kube.DefaultSyncTimeout)
// until the pods are listed and their endpoints applied, so the router serves none of its
// requests before it knows the fleet, then applies every change as it comes. The list may be
// empty (pods scale from zero): requests are answered 503 until a pod is ready. The discovery
// stops when ctx ends; Close waits for it.
func (r *Router) discover(ctx context.Context, cfg *config.Config, w *kube.Watcher, set *endpoints.Set) error {
	if w == nil {
		return nil
	}
	static := staticEndpoints(cfg)
	r.goRun(func() { _ = w.Run(ctx, func(eps []endpoints.Endpoint) { r.applyDiscovered(set, static, eps) }) })
	if err := w.WaitSynced(ctx); err != nil {
		return fmt.Errorf("%s: endpoints.kubernetes: %w", cfg.File(), err)
	}
	return nil
}

// followsPool reports whether w follows an InferencePool, whose InferenceObjectives and
// InferenceModelRewrites it then reads.
func followsPool(cfg *config.Config, w *kube.Watcher) bool {
	return w != nil && cfg.Endpoints.Kubernetes.InferencePool != ""
}

// priority maps an objective's name to its priority: the pool's InferenceObjective of that name
// first, when the router follows a pool, then the config's objectives.
func priority(cfg *config.Config, w *kube.Watcher) func(string) (int32, bool) {
	if !followsPool(cfg, w) {
		return cfg.Priority
	}
	return func(name string) (int32, bool) {
		if p, ok := w.Objective(name); ok {
			return p, true
		}
		return cfg.Priority(name)
	}
}

// modelRewrite is the pool's InferenceModelRewrite rules when the router follows a pool, nil
// otherwise.
func modelRewrite(cfg *config.Config, w *kube.Watcher) func(string) (string, string, bool) {
	if !followsPool(cfg, w) {
		return nil
	}
	return w.ModelRewrite
}

// applyDiscovered makes the fleet the static endpoints followed by the discovered ones. A pod
// whose endpoint ID is also a static endpoint's is left out (and logged), so that one clash never
// keeps a pod that stopped being ready in the rotation.
func (r *Router) applyDiscovered(set *endpoints.Set, static, eps []endpoints.Endpoint) {
	list := slices.Clone(static)
	for _, e := range eps {
		if slices.ContainsFunc(static, func(s endpoints.Endpoint) bool { return s.ID == e.ID }) {
			r.log.Error().Str("id", e.ID).Str("address", e.Address).
				Msg("a discovered pod has the id of a static endpoint; it is left out: rename the static endpoint")
			continue
		}
		list = append(list, e)
	}
	if err := set.Update(list); err != nil {
		r.log.Error().Err(err).Msg("discovered endpoints rejected; the old list stays")
		return
	}
	r.srv.Prune()
	r.log.Info().Int("endpoints", len(list)).Int("discovered", len(list)-len(static)).Msg("endpoints discovered")
}

// kubeConfig is endpoints.kubernetes as host/kube takes it.
func kubeConfig(k *config.Kubernetes) kube.Config {
	return kube.Config{Namespace: k.Namespace, InferencePool: k.InferencePool, Selector: k.Selector,
		TargetPort: intstrOf(k.TargetPort), KVEventsPort: intstrOf(k.KVEventsPort)}
}

// intstrOf is a port reference as host/kube takes it (zero when none is given).
func intstrOf(p config.PortRef) intstr.IntOrString {
	switch {
	case p.Name != "":
		return intstr.FromString(p.Name)
	case p.Number != 0:
		return intstr.FromInt32(int32(p.Number))
	}
	return intstr.IntOrString{}
}
