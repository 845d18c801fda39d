package proxy

import (
	"context"
	"sync"

	"github.com/foresight-router/foresight/host/kvindex"
	"github.com/foresight-router/foresight/host/openai"
	"github.com/foresight-router/foresight/host/tokenize"
)

// promptKeys is what a request's prompt is matched by against the endpoints' prefix caches:
// its text blocks, in the router's own record of where it sent what (prefix.Index), and, when
// the router reads the engines' KV-cache events (Options.KVEvents), the engine's tokens of the
// prompt and their block keys, in the record the events keep (kvindex.Index). Both are computed
// once, when the request arrives, in its own goroutine: a decision round's cycles only look
// them up.
type promptKeys struct {
	text openai.Blocks

	tokens []uint32 // the engine's tokens of the prompt; nil without KV events

	mu   sync.Mutex
	bs   int      // the block size keys are for
	keys []uint64 // BlockKeys of tokens at bs; never modified, so holds keep it

	// fromEvents are the endpoints of the request's last cycle whose match came from their
	// KV-cache events, for its trace. The cycles of one request are built one at a time.
	fromEvents []string
}

// promptKeysOf returns req's promptKeys: the text blocks always; with KV events live on some
// endpoint, the engine tokens and their keys at the block size the engines last reported (the
// fleet's, in practice).
// The tokens' count then replaces the estimate of the prompt's length in the request the stages
// see (cycle), so that the producer's uncached tokens are the engine's.
func (s *Server) promptKeysOf(ctx context.Context, req *openai.Request) *promptKeys {
	pk := &promptKeys{text: openai.HashBlocks(req.Prompt)}
	if s.o.KVEvents == nil || s.o.Tokenize == nil || req.Kind == openai.Embeddings || !s.o.KVEvents.AnyLive() {
		return pk // no endpoint's events would use the tokens: a remote tokenizer is not asked
	}
	tokens, err := s.o.Tokenize(ctx, req)
	if err != nil || len(tokens) == 0 {
		return pk // the tokenizer counts and logs its failures
	}
	pk.tokens = tokens
	if bs := s.o.KVEvents.FleetBlockSize(); bs > 0 {
		pk.bs, pk.keys = bs, tokenize.BlockKeys(nil, 0, pk.tokens, bs)
	}
	return pk
}

// keysAt returns the prompt's block keys at block size bs, computing them if the request
// arrived before any event said what the block size is, or an endpoint's differs.
func (pk *promptKeys) keysAt(bs int) []uint64 {
	pk.mu.Lock()
	defer pk.mu.Unlock()
	if bs != pk.bs {
		pk.bs, pk.keys = bs, tokenize.BlockKeys(nil, 0, pk.tokens, bs)
	}
	return pk.keys
}

// hold counts pk's prompt as cached on endpoint id until the attempt sent there ends; nil when
// the router reads no KV events or pk has no tokens.
func (s *Server) hold(id string, pk *promptKeys) *kvindex.Hold {
	kv := s.o.KVEvents
	if kv == nil || pk == nil || pk.tokens == nil {
		return nil
	}
	bs := kv.BlockSize(id)
	if bs <= 0 {
		bs = kv.FleetBlockSize()
	}
	if bs <= 0 {
		return nil // no endpoint has said what its blocks are
	}
	return kv.Hold(id, pk.keysAt(bs))
}

// prefixMatchNow is prefixMatch's fraction alone.
func (s *Server) prefixMatchNow(id string, pk *promptKeys) float64 {
	m, _ := s.prefixMatch(id, pk)
	return m
}

// prefixMatch returns the fraction of pk's prompt that endpoint id caches, and whether it comes
// from the engine's KV-cache events: from them when the endpoint's are live (kvindex.Index.Live),
// the matched blocks' tokens over the prompt's tokens; else from the router's own record, the
// matched text blocks over the prompt's.
func (s *Server) prefixMatch(id string, pk *promptKeys) (match float64, fromEvents bool) {
	if pk == nil {
		return 0, false
	}
	if kv := s.o.KVEvents; kv != nil && pk.tokens != nil {
		if n, bs, live := kv.LiveMatch(id, pk.keysAt); live {
			return min(float64(n*bs)/float64(len(pk.tokens)), 1), true // 0 before the engine stored anything
		}
	}
	return s.prefix.Fraction(id, pk.text.Hashes), false
}
