package router

import (
	"context"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/endpoints"
	"github.com/foresight-router/foresight/host/kvevents"
	"github.com/foresight-router/foresight/host/kvindex"
	"github.com/foresight-router/foresight/host/metrics"
	"github.com/foresight-router/foresight/host/openai"
)

// kvSyncInterval is how often the KV-event subscribers follow the endpoint list, and the
// endpoints' connection states and cache capacities reach the index: a new pod's events are read
// within it.
const kvSyncInterval = 250 * time.Millisecond

// kvEvents runs one subscriber per endpoint that names a KV-cache event publisher, applying its
// messages to the index the proxy matches prompts against (the kvEvents section). Without the
// section it reads nothing, and logs once each endpoint that names a publisher (the endpoints
// file's, a pod annotation's): the section was refused for static endpoints at load.
type kvEvents struct {
	section  *config.KVEvents
	index    *kvindex.Index // nil without the section
	tokenize *tokenizer     // nil without the section
	log      zerolog.Logger

	mu   sync.Mutex
	subs map[string]*kvSub // by endpoint ID
	bad  map[string]string // endpoints whose address was refused, with it (logged once)
}

// kvSub is one endpoint's running subscriber.
type kvSub struct {
	addr, replay string
	sub          *kvevents.Subscriber
	cancel       context.CancelFunc
	done         chan struct{}
}

// newKVEvents returns the subscribers' manager for section (nil: none read) over set's endpoints.
func newKVEvents(section *config.KVEvents, set *endpoints.Set, prefixBlocks int, log zerolog.Logger) *kvEvents {
	k := &kvEvents{section: section, log: log, subs: map[string]*kvSub{}, bad: map[string]string{}}
	if section == nil {
		return k
	}
	k.index, k.tokenize = kvindex.New(prefixBlocks), newTokenizer(section, set, log)
	return k
}

// tokens is the proxy's Options.Tokenize: nil without the section.
func (k *kvEvents) tokens() func(context.Context, *openai.Request) ([]uint32, error) {
	if k.tokenize == nil {
		return nil
	}
	return k.tokenize.tokens
}

// run follows set's endpoints until ctx ends, then stops every subscriber.
func (k *kvEvents) run(ctx context.Context, set *endpoints.Set) {
	t := time.NewTicker(kvSyncInterval)
	defer t.Stop()
	for {
		k.sync(ctx, set.Snapshot())
		select {
		case <-ctx.Done():
			k.sync(ctx, nil)
			return
		case <-t.C:
		}
	}
}

// sync starts a subscriber for each endpoint of states that names a publisher and has none, or
// whose address changed; stops those of endpoints gone or without one; and passes each
// endpoint's connection state and cache capacity to the index.
func (k *kvEvents) sync(ctx context.Context, states []endpoints.State) {
	k.mu.Lock()
	defer k.mu.Unlock()
	keep := make(map[string]bool, len(states))
	ids := make([]string, 0, len(states))
	for _, st := range states {
		ids = append(ids, st.ID)
		if st.KVEvents == "" {
			continue
		}
		if k.index == nil {
			if k.bad[st.ID] != st.KVEvents {
				k.bad[st.ID] = st.KVEvents
				k.log.Warn().Str("endpoint", st.ID).Str("address", st.KVEvents).
					Msg("the endpoint names a KV-cache event publisher, but the config has no kvEvents section: its events are not read")
			}
			continue
		}
		keep[st.ID] = true
		if s := k.subs[st.ID]; s != nil && (s.addr != st.KVEvents || s.replay != st.KVEventsReplay) {
			k.stop(st.ID, s)
		}
		if k.subs[st.ID] == nil && ctx.Err() == nil {
			k.start(ctx, st.Endpoint)
		}
		if s := k.subs[st.ID]; s != nil {
			k.index.SetLive(st.ID, s.sub.Stats().Connected)
		}
		if st.NumGPUBlocks > 0 {
			k.index.SetCapacity(st.ID, st.NumGPUBlocks)
		}
	}
	for id, s := range k.subs {
		if !keep[id] {
			k.stop(id, s)
		}
	}
	if k.index != nil {
		k.index.Retain(ids)
	}
}

// start starts e's subscriber; an address it refuses is logged once, and e's matches stay the
// router's own record's.
func (k *kvEvents) start(ctx context.Context, e endpoints.Endpoint) {
	id := e.ID
	sub, err := kvevents.NewSubscriber(kvevents.SubscriberConfig{Address: e.KVEvents, Replay: e.KVEventsReplay, Topic: k.section.Topic,
		Handle: func(m *kvevents.Message) { k.index.Apply(id, m) }, Log: k.log.With().Str("endpoint", id).Logger()})
	if err != nil {
		if k.bad[id] != e.KVEvents {
			k.bad[id] = e.KVEvents
			k.log.Error().Err(err).Str("endpoint", id).Msg("its KV-cache events cannot be read; its prefix match stays the router's own record's")
		}
		return
	}
	delete(k.bad, id)
	sctx, cancel := context.WithCancel(ctx)
	s := &kvSub{addr: e.KVEvents, replay: e.KVEventsReplay, sub: sub, cancel: cancel, done: make(chan struct{})}
	k.subs[id] = s
	go func() {
		defer close(s.done)
		_ = sub.Run(sctx)
	}()
	k.log.Info().Str("endpoint", id).Str("address", e.KVEvents).Msg("reading the endpoint's KV-cache events")
}

// stop stops endpoint id's subscriber and waits for it.
func (k *kvEvents) stop(id string, s *kvSub) {
	s.cancel()
	<-s.done
	delete(k.subs, id)
	k.index.SetLive(id, false)
}

// stats returns every subscribed endpoint's state and counters, for /metrics.
func (k *kvEvents) stats() []metrics.KVEndpoint {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make([]metrics.KVEndpoint, 0, len(k.subs))
	for id, s := range k.subs { // none without the index
		out = append(out, metrics.KVEndpoint{ID: id, Live: k.index.Live(id), Index: k.index.Stats(id), Subscriber: s.sub.Stats()})
	}
	return out
}

// tokenized returns the prompts tokenized and the tokenizations failed, for /metrics.
func (k *kvEvents) tokenized() (ok, failed uint64) {
	return k.tokenize.ok.Load(), k.tokenize.failed.Load()
}
