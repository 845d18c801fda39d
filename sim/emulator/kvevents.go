package emulator

import (
	"fmt"
	"time"

	"github.com/foresight-router/foresight/host/kvevents"
	"github.com/foresight-router/foresight/internal/splitmix"
	"github.com/foresight-router/foresight/sim/engine"
)

// KV-cache events, as vLLM publishes them with --kv-events-config: after every engine step that
// changed the prefix cache, one batch on a ZeroMQ PUB socket (host/kvevents.Publisher), with a
// replay socket for missed batches. The engine's cache-event log (engine.CacheEvent) says which
// hashes became findable and which stopped being; a run of stored blocks of one request becomes
// one BlockStored with the request's token ids for them and the hash of the block before them, as
// vLLM's cache_full_blocks does, and removals one BlockRemoved.

// WithKVEvents makes the servers publish their KV-cache events on tcp://127.0.0.1:PORT, with a
// replay socket on PORT+1: applied to a fleet's servers in order (Start), server i takes
// basePort+2i, or free ports when basePort is 0. KVEventsAddr and KVEventsReplayAddr name them.
func WithKVEvents(basePort int) Option {
	next := 0
	return func(s *Server) {
		s.kvPorts = [2]int{0, 0}
		if basePort > 0 {
			s.kvPorts = [2]int{basePort + 2*next, basePort + 2*next + 1}
		}
		s.kvEvents = true
		next++
	}
}

// kvReplayBuffer is how many batches a server keeps for replay (vLLM's default buffer_steps).
const kvReplayBuffer = 10000

// startKVEvents starts the server's publisher, when WithKVEvents asked for one.
func (s *Server) startKVEvents() error {
	if !s.kvEvents {
		return nil
	}
	s.eng.RecordCacheEvents()
	pub, err := kvevents.NewPublisher(fmt.Sprintf("tcp://127.0.0.1:%d", s.kvPorts[0]),
		fmt.Sprintf("tcp://127.0.0.1:%d", s.kvPorts[1]), "", kvReplayBuffer)
	if err != nil {
		return fmt.Errorf("publishing KV-cache events: %w", err)
	}
	s.kvPub = pub
	return nil
}

// KVEventsAddr is the address the server publishes its KV-cache events on, "" without them.
func (s *Server) KVEventsAddr() string {
	if s.kvPub == nil {
		return ""
	}
	return s.kvPub.Addr()
}

// KVEventsReplayAddr is the server's replay socket's address, "" without KV-cache events.
func (s *Server) KVEventsReplayAddr() string {
	if s.kvPub == nil {
		return ""
	}
	return s.kvPub.ReplayAddr()
}

// publishCacheEvents publishes the cache events of the step just run, as one batch. It runs on
// the engine loop, before the step's finished requests leave sinks: their tokens are still there.
func (s *Server) publishCacheEvents() {
	if s.kvPub == nil {
		return
	}
	s.kvLog = s.eng.TakeCacheEvents(s.kvLog[:0])
	if len(s.kvLog) == 0 {
		return
	}
	b := &s.kvBatch
	b.Events, b.TS = b.Events[:0], float64(time.Now().UnixNano())/1e9
	for i := 0; i < len(s.kvLog); {
		n := s.kvRun(i)
		b.Events = append(b.Events, s.kvEvent(s.kvLog[i:i+n]))
		i += n
	}
	if err := s.kvPub.Publish(b); err != nil {
		s.kvErrors.Add(1)
	}
}

// kvRun returns how many events from i make one vLLM event: a run of removals, or of stored
// blocks of one request each continuing the one before.
func (s *Server) kvRun(i int) int {
	first, n := s.kvLog[i], 1
	for i+n < len(s.kvLog) {
		ev := s.kvLog[i+n]
		if ev.Kind != first.Kind || first.Kind == engine.CacheCleared ||
			first.Kind == engine.CacheStored && (ev.Request != first.Request || ev.Block != first.Block+n) {
			break
		}
		n++
	}
	return n
}

// kvEvent is the vLLM event of a run of the log. A stored block's token ids are its request's
// (the prompt's; a generated block's are not kept, so they are drawn from its hash, which makes
// its key, like its hash, unique to the request, as it is in this engine).
func (s *Server) kvEvent(run []engine.CacheEvent) kvevents.Event {
	ev := kvevents.Event{Medium: "GPU"}
	for _, c := range run {
		ev.Hashes = append(ev.Hashes, c.Hash)
	}
	switch run[0].Kind {
	case engine.CacheRemoved:
		ev.Kind = kvevents.Removed
		return ev
	case engine.CacheCleared:
		return kvevents.Event{Kind: kvevents.Cleared}
	}
	ev.Kind, ev.BlockSize = kvevents.Stored, s.block
	ev.Parent, ev.HasParent = run[0].Parent, run[0].HasParent
	var tokens []uint32
	if k := s.sinks[run[0].Request]; k != nil {
		tokens = k.tokens
	}
	for _, c := range run {
		if end := (c.Block + 1) * s.block; end <= len(tokens) {
			ev.Tokens = append(ev.Tokens, tokens[c.Block*s.block:end]...)
			continue
		}
		for j := range s.block {
			ev.Tokens = append(ev.Tokens, uint32(splitmix.Mix(c.Hash+uint64(j))))
		}
	}
	return ev
}

// WithKVCacheBlocks sets the server's KV cache capacity in blocks (engine Config.NumGPUBlocks,
// foresight emulate --kv-cache-blocks), in place of its preset's: a small cache evicts soon.
func WithKVCacheBlocks(n int) Option {
	return func(s *Server) { s.edits = append(s.edits, func(c *engine.Config) { c.NumGPUBlocks = n }) }
}
