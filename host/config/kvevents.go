package config

import (
	"cmp"
	"time"

	"github.com/foresight-router/foresight/host/endpoints"
)

// KVEvents configures reading the engines' KV-cache events (host/kvevents, host/kvindex): an
// endpoint that names its event publisher (endpoints.static[].kvEvents, the endpoints file's
// kvEvents, endpoints.kubernetes.kvEventsPort or its pod's foresight.io/kv-events annotation) has
// its prefix match computed from what its engine reports cached, instead of from the router's
// own record of what it sent there.
type KVEvents struct {
	// Tokenizer turns a prompt into the token ids the engines compute, which their events name
	// blocks by: "vllm" (the engines' own POST /tokenize, with the served model's tokenizer and
	// chat template) or "emulator" (Foresight's engine emulator, `foresight emulate`, in the
	// router). Required.
	Tokenizer string `yaml:"tokenizer"`
	// TokenizeTimeout bounds one /tokenize call (tokenizer vllm; default 200ms): a request not
	// tokenized in time is matched by the router's own record.
	TokenizeTimeout time.Duration `yaml:"tokenizeTimeout"`
	// Topic is the subscription's topic prefix (default "": every topic; vLLM's default topic is
	// empty).
	Topic string `yaml:"topic"`
}

// The tokenizers kvEvents.tokenizer names.
const (
	// TokenizerVLLM asks an endpoint serving the request's model for its tokens (vLLM's POST
	// /tokenize: host/tokenize.Remote).
	TokenizerVLLM = "vllm"
	// TokenizerEmulator is host/tokenize.Emulator, the tokenizer of Foresight's engine emulator.
	TokenizerEmulator = "emulator"
)

// DefaultTokenizeTimeout is kvEvents.tokenizeTimeout's default: vLLM tokenizes a 10,000-token
// prompt in milliseconds; a request whose call takes longer is decided without waiting more.
const DefaultTokenizeTimeout = 200 * time.Millisecond

// ValidateKVEvents checks the kvEvents section and the event addresses of the static endpoints:
// an endpoint's publisher needs the section, whose tokenizer matches the requests to its events.
func (c *Config) ValidateKVEvents() error {
	for i, e := range c.Endpoints.Static {
		for _, f := range []struct{ name, addr string }{{"kvEvents", e.KVEvents}, {"kvEventsReplay", e.KVEventsReplay}} {
			if f.addr == "" {
				continue
			}
			if err := endpoints.ValidateKVEvents(f.addr); err != nil {
				return c.errorAt([]any{"endpoints", "static", i, f.name}, "%v", err)
			}
			if c.KVEvents == nil {
				return c.errorAt([]any{"endpoints", "static", i, f.name}, "reading KV-cache events needs the kvEvents section, "+
					"whose tokenizer matches requests to the engine's blocks (kvEvents: {tokenizer: vllm})")
			}
		}
		if e.KVEventsReplay != "" && e.KVEvents == "" {
			return c.errorAt([]any{"endpoints", "static", i, "kvEventsReplay"}, "a replay address needs the publisher's, kvEvents")
		}
	}
	if k := c.Endpoints.Kubernetes; k != nil && !k.KVEventsPort.IsZero() && c.KVEvents == nil {
		return c.errorAt([]any{"endpoints", "kubernetes", "kvEventsPort"}, "reading KV-cache events needs the kvEvents section, "+
			"whose tokenizer matches requests to the engine's blocks (kvEvents: {tokenizer: vllm})")
	}
	if c.KVEvents == nil {
		return nil
	}
	switch c.KVEvents.Tokenizer {
	case TokenizerVLLM, TokenizerEmulator:
	case "":
		return c.errorAt([]any{"kvEvents", "tokenizer"}, "is required: vllm (the engines' POST /tokenize) or emulator")
	default:
		return c.errorAt([]any{"kvEvents", "tokenizer"}, "%q is not a tokenizer: vllm (the engines' POST /tokenize) or emulator", c.KVEvents.Tokenizer)
	}
	if c.KVEvents.TokenizeTimeout < 0 {
		return c.errorAt([]any{"kvEvents", "tokenizeTimeout"}, "must be positive, got %v", c.KVEvents.TokenizeTimeout)
	}
	return nil
}

// applyDefaults sets the section's defaults; a nil section stays nil.
func (k *KVEvents) applyDefaults() {
	if k != nil {
		k.TokenizeTimeout = cmp.Or(k.TokenizeTimeout, DefaultTokenizeTimeout)
	}
}
