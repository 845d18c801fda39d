package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/foresight-router/foresight/host/endpoints"
	"github.com/foresight-router/foresight/host/modelrewrite"
	"github.com/rs/zerolog"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic/dynamicinformer"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// Watcher follows the pods (and the InferencePool) of a Config and reports the endpoints they
// make. Create it with New, run it with Run, and wait for its first list with WaitSynced.
type Watcher struct {
	cfg  Config
	log  zerolog.Logger
	pods cache.SharedIndexInformer
	pool cache.SharedIndexInformer // nil with a selector

	// The pool's InferenceObjectives and InferenceModelRewrites (crd.go), nil with a selector,
	// watched when the cluster serves them (discovery); what they make is read without a lock.
	objectives, rewrites *crdWatch
	discovery            discovery.DiscoveryInterfaceWithContext
	priorities           atomic.Pointer[map[string]int32]
	rewriteSet           atomic.Pointer[modelrewrite.Set]

	kick    chan struct{} // an informer saw an event: compute the list again
	synced  chan struct{} // closed once the first list was delivered
	started atomic.Bool

	mu       sync.Mutex
	watchErr map[string]error // the last list or watch error per resource ("pods", "inferencepools")

	// Owned by Run's goroutine.
	last     []endpoints.Endpoint
	poolSeen string          // what was last logged of the pool: "" (nothing yet), "missing", an error, or its spec
	noPort   map[string]bool // pods already logged for lacking the named target port
}

// New returns a watcher of cfg through c (c.Dynamic is needed with cfg.InferencePool). It reads
// nothing before Run; with a pool, Run also asks c.Core's discovery whether the cluster serves
// InferenceObjective and InferenceModelRewrite, and watches those it serves. Its errors are cfg's: neither or both of InferencePool and Selector, a
// TargetPort missing with a selector or given with a pool, a port number out of range.
func New(cfg Config, c Clients, log zerolog.Logger) (*Watcher, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if c.Core == nil || (cfg.InferencePool != "" && c.Dynamic == nil) {
		return nil, errors.New("kubernetes discovery: a clientset (and, for an InferencePool, a dynamic client) is required")
	}
	w := &Watcher{cfg: cfg, log: log.With().Str("namespace", cfg.Namespace).Logger(),
		kick: make(chan struct{}, 1), synced: make(chan struct{}), watchErr: map[string]error{}, noPort: map[string]bool{}}
	if cfg.InferencePool != "" {
		w.log = w.log.With().Str("inferencePool", cfg.InferencePool).Logger()
		// Every pod of the namespace: the pool's selector may change, and following it must not
		// wait for a new list.
		w.pods = coreinformers.NewFilteredPodInformer(c.Core, cfg.Namespace, 0, cache.Indexers{}, nil)
		w.pool = dynamicinformer.NewFilteredDynamicInformer(c.Dynamic, PoolResource, cfg.Namespace, 0, cache.Indexers{},
			func(o *metav1.ListOptions) { o.FieldSelector = "metadata.name=" + cfg.InferencePool }).Informer()
		w.discovery = c.Core.Discovery()
		if w.objectives, err = w.newCRDWatch(c.Dynamic, ObjectiveResource, "InferenceObjective",
			"x-gateway-inference-objective names the config's objectives only", w.rebuildObjectives); err != nil {
			return nil, err
		}
		if w.rewrites, err = w.newCRDWatch(c.Dynamic, ModelRewriteResource, "InferenceModelRewrite",
			"models are not rewritten by the cluster's rules", w.rebuildRewrites); err != nil {
			return nil, err
		}
	} else {
		w.log = w.log.With().Str("selector", selectorString(cfg.Selector)).Logger()
		sel := labels.SelectorFromSet(cfg.Selector).String()
		w.pods = coreinformers.NewFilteredPodInformer(c.Core, cfg.Namespace, 0, cache.Indexers{},
			func(o *metav1.ListOptions) { o.LabelSelector = sel })
	}
	_ = w.pods.SetTransform(stripManagedFields)
	for _, inf := range w.informers() {
		handler := cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { w.notify() },
			UpdateFunc: func(any, any) { w.notify() },
			DeleteFunc: func(any) { w.notify() },
		}
		if _, err := inf.AddEventHandler(handler); err != nil {
			return nil, fmt.Errorf("kubernetes discovery: %w", err)
		}
	}
	_ = w.pods.SetWatchErrorHandlerWithContext(w.watchError("pods"))
	if w.pool != nil {
		_ = w.pool.SetWatchErrorHandlerWithContext(w.watchError(PoolResource.Resource))
	}
	return w, nil
}

func (w *Watcher) informers() []cache.SharedIndexInformer {
	if w.pool == nil {
		return []cache.SharedIndexInformer{w.pods}
	}
	return []cache.SharedIndexInformer{w.pods, w.pool}
}

// notify asks Run's goroutine to compute the list again. Events that come while it computes
// make one more computation, over the stores as they are then: nothing is delayed.
func (w *Watcher) notify() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// Run watches until ctx ends and returns nil once its informers stopped, or at once with an error
// when called a second time. Once the informers have listed the pods (and the pool) it calls
// onChange with the initial list, possibly empty (pods may scale from zero); from then on it calls
// it after any pod or pool event that changes the list: the ready pods picked, on their target
// ports, sorted by ID. The calls come from Run's goroutine, one at a time, each with the full
// list, which onChange may keep but must not modify.
func (w *Watcher) Run(ctx context.Context, onChange func([]endpoints.Endpoint)) error {
	if !w.started.CompareAndSwap(false, true) {
		return errors.New("kubernetes discovery: Run was called twice")
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	checkers := make([]cache.DoneChecker, 0, 4)
	for _, inf := range w.informers() {
		wg.Go(func() { inf.RunWithContext(ctx) })
		checkers = append(checkers, inf.HasSyncedChecker())
	}
	checkers = append(checkers, w.startCRDWatches(ctx, &wg)...)
	if !cache.WaitFor(ctx, "", checkers...) {
		return nil
	}
	for _, cw := range w.crdWatches() {
		if cw.on.Load() { // published before the first list: the handlers may not have run yet
			w.refresh(cw)
		}
	}
	w.log.Info().Msg("kubernetes discovery synced")
	eps := w.compute()
	w.deliver(eps, onChange)
	close(w.synced)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-w.kick:
			if eps := w.compute(); !sameList(eps, w.last) {
				w.deliver(eps, onChange)
			}
		}
	}
}

// deliver hands eps to onChange and keeps it as the last list delivered.
func (w *Watcher) deliver(eps []endpoints.Endpoint, onChange func([]endpoints.Endpoint)) {
	w.logDiff(eps)
	w.last = eps
	onChange(eps)
}

// WaitSynced returns nil once Run delivered the initial list, ctx's error when ctx ends first,
// or, after Config.SyncTimeout, an error naming the namespace, what is watched, the last list
// error and the permissions the router's service account needs.
func (w *Watcher) WaitSynced(ctx context.Context) error {
	timer := time.NewTimer(w.cfg.SyncTimeout)
	defer timer.Stop()
	select {
	case <-w.synced:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
	}
	select {
	case <-w.synced: // at the deadline
		return nil
	default:
	}
	ns := w.cfg.Namespace
	w.mu.Lock()
	defer w.mu.Unlock()
	why := func(resource string) string {
		if err := w.watchErr[resource]; err != nil {
			return err.Error()
		}
		return fmt.Sprintf("no complete list within %v", w.cfg.SyncTimeout)
	}
	prefix := fmt.Sprintf("kubernetes discovery (namespace %s, %s)", ns, w.cfg.source())
	if !w.pods.HasSynced() {
		return fmt.Errorf("%s: cannot list pods in namespace %s: %s (does the service account have get/list/watch on pods?)",
			prefix, ns, why("pods"))
	}
	if w.pool != nil && w.pool.HasSynced() {
		for _, cw := range w.crdWatches() {
			if r := cw.res; cw.on.Load() && !cw.inf.HasSynced() {
				return fmt.Errorf("%s: cannot list %s.%s in namespace %s: %s (the cluster serves %s/%s: does the service account "+
					"have get/list/watch on %s in group %s?)", prefix, r.Resource, r.Group, ns, why(r.Resource), r.Group, r.Version, r.Resource, r.Group)
			}
		}
	}
	return fmt.Errorf("%s: cannot list %s.%s in namespace %s: %s (is the InferencePool CRD %s/%s installed, and does the "+
		"service account have get/list/watch on %s in group %s?)", prefix, PoolResource.Resource, PoolResource.Group, ns,
		why(PoolResource.Resource), PoolResource.Group, PoolResource.Version, PoolResource.Resource, PoolResource.Group)
}

// watchError records and logs a failed list or watch of resource; the informer retries it with
// a backoff. A watch that the API server closes or expires is routine and neither.
func (w *Watcher) watchError(resource string) cache.WatchErrorHandlerWithContext {
	return func(_ context.Context, _ *cache.Reflector, err error) {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
			return
		}
		var status apierrors.APIStatus
		if errors.As(err, &status) { // the API server's answer, without the reflector's "failed to list <type>"
			if e, ok := status.(error); ok {
				err = e
			}
		}
		w.mu.Lock()
		w.watchErr[resource] = err
		w.mu.Unlock()
		w.log.Warn().Err(err).Str("resource", resource).Msg("kubernetes discovery: list or watch failed; retrying")
	}
}

// compute returns the current endpoints from the informers' stores and logs what changed in
// the pool and which pods lack the named port.
func (w *Watcher) compute() []endpoints.Endpoint {
	t, ok := w.target()
	if !ok {
		return nil
	}
	objs := w.pods.GetStore().List()
	pods := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok {
			pods = append(pods, p)
		}
	}
	eps, noPort := endpointsOf(pods, t)
	for _, name := range noPort {
		if !w.noPort[name] {
			w.noPort[name] = true
			w.log.Warn().Str("pod", name).Str("targetPort", t.ports[0].String()).
				Msg("kubernetes discovery: the pod has no container port of that name; it is not an endpoint")
		}
	}
	for name := range w.noPort {
		if !slices.Contains(noPort, name) {
			delete(w.noPort, name)
		}
	}
	return eps
}

// target returns the labels and ports in force: the config's, or the pool's as it is now. It is
// false while the pool is missing or its spec cannot be read (no endpoints then); each change of
// the pool's state is logged once.
func (w *Watcher) target() (target, bool) {
	if w.pool == nil {
		return target{matchLabels: w.cfg.Selector, ports: []intstr.IntOrString{w.cfg.TargetPort}, kvPort: w.cfg.KVEventsPort}, true
	}
	obj, exists, err := w.pool.GetStore().GetByKey(w.cfg.Namespace + "/" + w.cfg.InferencePool)
	if err != nil || !exists {
		w.notePool("missing", zerolog.WarnLevel, func(e *zerolog.Event) *zerolog.Event { return e },
			"kubernetes discovery: the InferencePool does not exist (deleted, or not created yet): no endpoints")
		return target{}, false
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return target{}, false
	}
	p, err := parsePool(u)
	if err != nil {
		w.notePool(err.Error(), zerolog.ErrorLevel, func(e *zerolog.Event) *zerolog.Event { return e.Err(err) },
			"kubernetes discovery: the InferencePool's spec cannot be followed: no endpoints")
		return target{}, false
	}
	w.notePool(p.String(), zerolog.InfoLevel, func(e *zerolog.Event) *zerolog.Event {
		return e.Str("selector", selectorString(p.matchLabels)).Ints32("targetPorts", p.ports)
	}, "kubernetes discovery: following the InferencePool")
	t := target{matchLabels: p.matchLabels, kvPort: w.cfg.KVEventsPort}
	for _, n := range p.ports {
		t.ports = append(t.ports, intstr.FromInt32(n))
	}
	return t, true
}

// notePool logs msg at level when the pool's state differs from the last one logged.
func (w *Watcher) notePool(state string, level zerolog.Level, fields func(*zerolog.Event) *zerolog.Event, msg string) {
	if state == w.poolSeen {
		return
	}
	w.poolSeen = state
	fields(w.log.WithLevel(level)).Msg(msg)
}

// logDiff logs, at debug level, the endpoints that joined and left since the last list.
func (w *Watcher) logDiff(eps []endpoints.Endpoint) {
	if e := w.log.Debug(); e.Enabled() {
		var joined, left []string
		for _, ep := range eps {
			if !slices.ContainsFunc(w.last, func(o endpoints.Endpoint) bool { return o.ID == ep.ID && o.Address == ep.Address }) {
				joined = append(joined, ep.ID+"="+ep.Address)
			}
		}
		for _, ep := range w.last {
			if !slices.ContainsFunc(eps, func(o endpoints.Endpoint) bool { return o.ID == ep.ID && o.Address == ep.Address }) {
				left = append(left, ep.ID+"="+ep.Address)
			}
		}
		if len(joined)+len(left) > 0 {
			e.Strs("joined", joined).Strs("left", left).Msg("kubernetes discovery: pods changed")
		}
	}
}

// stripManagedFields drops a pod's managedFields, which a namespace's worth of pods would keep
// in memory for nothing; the object is copied first, as a watch may hand over one it shares.
func stripManagedFields(obj any) (any, error) {
	if p, ok := obj.(*corev1.Pod); ok && len(p.ManagedFields) > 0 {
		p = p.DeepCopy()
		p.ManagedFields = nil
		return p, nil
	}
	return obj, nil
}
