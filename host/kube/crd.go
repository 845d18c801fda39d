package kube

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/foresight-router/foresight/host/modelrewrite"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
)

// ObjectiveResource is the Gateway API Inference Extension's InferenceObjective (v1alpha2): a
// name requests give in x-gateway-inference-objective, with its spec.priority, for one pool
// (spec.poolRef). It is read, as unstructured data, only when the cluster serves it.
var ObjectiveResource = schema.GroupVersionResource{Group: "inference.networking.x-k8s.io", Version: "v1alpha2", Resource: "inferenceobjectives"}

// ModelRewriteResource is the Gateway API Inference Extension's InferenceModelRewrite
// (v1alpha2): rules that rewrite the model a request names, for one pool (spec.poolRef). It is
// read, as unstructured data, only when the cluster serves it.
var ModelRewriteResource = schema.GroupVersionResource{Group: "inference.networking.x-k8s.io", Version: "v1alpha2", Resource: "inferencemodelrewrites"}

// crdWatch follows one of the pool's optional resources (an InferenceObjective or an
// InferenceModelRewrite): every event rebuilds, from the informer's store, the immutable state
// the hot path reads without a lock.
type crdWatch struct {
	res     schema.GroupVersionResource
	kind    string // as logs name it: "InferenceObjective"
	without string // what the router does when the cluster does not serve res
	inf     cache.SharedIndexInformer
	on      atomic.Bool // the cluster serves res: Run started inf
	// rebuild builds and publishes the state from the objects of the namespace; it returns what
	// it could not read (one message per object or rule) and a summary of what it kept.
	rebuild func(objs []*unstructured.Unstructured) (problems, summary []string)

	mu      sync.Mutex      // one rebuild at a time: the last one published read the newest store
	logged  map[string]bool // the problems the last rebuild logged
	summary []string        // what the last rebuild kept, as logged
}

// newCRDWatch returns the watch of res in w's namespace through dyn.
func (w *Watcher) newCRDWatch(dyn dynamic.Interface, res schema.GroupVersionResource, kind, without string,
	rebuild func([]*unstructured.Unstructured) ([]string, []string)) (*crdWatch, error) {
	cw := &crdWatch{res: res, kind: kind, without: without, rebuild: rebuild, logged: map[string]bool{},
		inf: dynamicinformer.NewFilteredDynamicInformer(dyn, res, w.cfg.Namespace, 0, cache.Indexers{}, nil).Informer()}
	refresh := func() { w.refresh(cw) }
	if _, err := cw.inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { refresh() },
		UpdateFunc: func(any, any) { refresh() },
		DeleteFunc: func(any) { refresh() },
	}); err != nil {
		return nil, fmt.Errorf("kubernetes discovery: %w", err)
	}
	_ = cw.inf.SetWatchErrorHandlerWithContext(w.watchError(res.Resource))
	return cw, nil
}

// crdWatches are the pool's optional watches (none with a selector).
func (w *Watcher) crdWatches() []*crdWatch {
	if w.objectives == nil {
		return nil
	}
	return []*crdWatch{w.objectives, w.rewrites}
}

// startCRDWatches starts, under ctx, the watches of the resources the cluster serves (asked
// through discovery) and returns their sync checkers. A resource it does not serve (its CRD is
// not installed) is logged once at info, one discovery could not check at warn; neither is
// watched, and neither is an error: both resources are optional.
func (w *Watcher) startCRDWatches(ctx context.Context, wg *sync.WaitGroup) []cache.DoneChecker {
	var checkers []cache.DoneChecker
	for _, cw := range w.crdWatches() {
		ok, err := served(ctx, w.discovery, cw.res)
		switch {
		case err != nil:
			w.log.Warn().Err(err).Str("resource", cw.res.Resource+"."+cw.res.Group).
				Msg("kubernetes discovery: cannot tell whether the cluster serves " + cw.kind + "; not watched: " + cw.without)
		case !ok:
			w.log.Info().Str("resource", cw.res.Resource+"."+cw.res.Group).Str("version", cw.res.Version).
				Msg("kubernetes discovery: the " + cw.kind + " CRD is not installed; not watched: " + cw.without)
		default:
			cw.on.Store(true)
			wg.Go(func() { cw.inf.RunWithContext(ctx) })
			checkers = append(checkers, cw.inf.HasSyncedChecker())
		}
	}
	return checkers
}

// served reports whether the API server serves res (its CRD is installed and established).
func served(ctx context.Context, d discovery.DiscoveryInterfaceWithContext, res schema.GroupVersionResource) (bool, error) {
	list, err := d.ServerResourcesForGroupVersionWithContext(ctx, res.GroupVersion().String())
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == res.Resource }), nil
}

// refresh rebuilds cw's state from its store, logs each problem once (again only after it went
// away and came back) and what was kept when it changed.
func (w *Watcher) refresh(cw *crdWatch) {
	cw.mu.Lock()
	defer cw.mu.Unlock()
	var objs []*unstructured.Unstructured
	for _, o := range cw.inf.GetStore().List() {
		if u, ok := o.(*unstructured.Unstructured); ok {
			objs = append(objs, u)
		}
	}
	problems, summary := cw.rebuild(objs)
	now := map[string]bool{}
	for _, p := range problems {
		now[p] = true
		if !cw.logged[p] {
			w.log.Error().Str("resource", cw.res.Resource).Msg("kubernetes discovery: " + p)
		}
	}
	cw.logged = now
	if !slices.Equal(summary, cw.summary) {
		cw.summary = summary
		w.log.Info().Strs(cw.res.Resource, summary).Msg("kubernetes discovery: following the pool's " + cw.kind + "s")
	}
}

// rebuildObjectives publishes the priorities of the pool's InferenceObjectives.
func (w *Watcher) rebuildObjectives(objs []*unstructured.Unstructured) (problems, summary []string) {
	m := map[string]int32{}
	for _, u := range objs {
		p, ours, err := parseObjective(u, w.cfg.InferencePool)
		if err != nil {
			problems = append(problems, fmt.Sprintf("InferenceObjective %q is skipped: %v", u.GetName(), err))
			continue
		}
		if ours {
			m[u.GetName()] = p
		}
	}
	w.priorities.Store(&m)
	for _, name := range slices.Sorted(maps.Keys(m)) {
		summary = append(summary, name+"="+strconv.Itoa(int(m[name])))
	}
	return problems, summary
}

// rebuildRewrites publishes the rules of the pool's InferenceModelRewrites.
func (w *Watcher) rebuildRewrites(objs []*unstructured.Unstructured) (problems, summary []string) {
	var resources []modelrewrite.Resource
	for _, u := range objs {
		r, ours, err := parseModelRewrite(u, w.cfg.InferencePool)
		if err != nil {
			problems = append(problems, fmt.Sprintf("InferenceModelRewrite %q is skipped: %v", u.GetName(), err))
			continue
		}
		if ours {
			resources = append(resources, r)
			summary = append(summary, fmt.Sprintf("%s (rules: %d)", u.GetName(), len(r.Rules)))
		}
	}
	set, errs := modelrewrite.New(resources)
	for _, err := range errs {
		problems = append(problems, err.Error())
	}
	w.rewriteSet.Store(set)
	slices.Sort(summary)
	return problems, summary
}

// Objective returns the priority of the pool's InferenceObjective called name (0 when its
// spec.priority is unset), or false when there is none: no such object, one of another pool,
// one that cannot be read, or no InferenceObjective watched (a selector, or the CRD not
// installed). It takes no lock.
func (w *Watcher) Objective(name string) (priority int32, ok bool) {
	m := w.priorities.Load()
	if m == nil {
		return 0, false
	}
	priority, ok = (*m)[name]
	return priority, ok
}

// ModelRewrite returns the model a request for model is sent as, by the pool's
// InferenceModelRewrite rules (modelrewrite.Set.Pick, a weighted random target), and the rule
// that chose it ("namespace/name#index"); false when no rule matches or none is watched. It
// takes no lock.
func (w *Watcher) ModelRewrite(model string) (target, rule string, ok bool) {
	return w.rewriteSet.Load().Pick(model, rand.IntN)
}
