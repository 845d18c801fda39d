package router

import (
	"cmp"
	"context"
	"errors"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/endpoints"
	"github.com/foresight-router/foresight/host/openai"
	"github.com/foresight-router/foresight/host/tokenize"
)

// tokenizer turns a request's prompt into the engines' token ids, as the kvEvents section's
// tokenizer says, and counts what it did for /metrics.
type tokenizer struct {
	kind   string
	set    *endpoints.Set
	remote *tokenize.Remote
	next   atomic.Uint64 // round robin over the endpoints a remote tokenizer asks
	log    zerolog.Logger

	ok, failed atomic.Uint64
	logged     atomic.Int64 // when a failure was last logged (unix ns): at most one in failureLogEvery
}

// failureLogEvery spaces the warnings of failed tokenizations; the metric counts them all.
const failureLogEvery = 10 * time.Second

// newTokenizer returns section's tokenizer; set is the fleet a remote tokenizer asks.
func newTokenizer(section *config.KVEvents, set *endpoints.Set, log zerolog.Logger) *tokenizer {
	t := &tokenizer{kind: section.Tokenizer, set: set, log: log}
	if t.kind == config.TokenizerVLLM {
		dialer := &net.Dialer{Timeout: time.Second, KeepAlive: 30 * time.Second}
		t.remote = &tokenize.Remote{Timeout: cmp.Or(section.TokenizeTimeout, config.DefaultTokenizeTimeout), Client: &http.Client{Transport: &http.Transport{
			DialContext: dialer.DialContext, MaxIdleConnsPerHost: 64, IdleConnTimeout: 90 * time.Second}}}
	}
	return t
}

// tokens returns req's prompt's token ids: nil for a request the tokenizer does not take (a
// remote one takes completions and chat), an error when it failed (counted).
func (t *tokenizer) tokens(ctx context.Context, req *openai.Request) ([]uint32, error) {
	if t.remote == nil {
		t.ok.Add(1)
		return tokenize.Emulator(nil, req.Prompt), nil
	}
	body, ok, err := req.TokenizeBody()
	if !ok || err != nil {
		return nil, err
	}
	var tokens []uint32
	if base, ok := t.endpoint(req.Model); ok {
		tokens, err = t.remote.Tokens(ctx, base, body)
	} else {
		err = errNoEndpoint
	}
	if err != nil {
		t.failed.Add(1)
		if now := time.Now().UnixNano(); now-t.logged.Load() >= int64(failureLogEvery) {
			t.logged.Store(now)
			t.log.Warn().Err(err).Msg("a prompt could not be tokenized: its prefix matches are the router's own record's (foresight_kv_events_tokenized_total counts them)")
		}
		return nil, err
	}
	t.ok.Add(1)
	return tokens, nil
}

// errNoEndpoint is a remote tokenizer's failure when no endpoint is in the rotation.
var errNoEndpoint = errors.New("no endpoint in the rotation to ask for the tokens")

// endpoint returns the base URL of the endpoint to ask for req's tokens: the endpoints in the
// rotation serving model (any in the rotation when none lists it), in turn; false when the
// rotation is empty.
func (t *tokenizer) endpoint(model string) (string, bool) {
	states := t.set.Snapshot()
	var serving, routable []endpoints.State
	for _, st := range states {
		if !st.Routable() {
			continue
		}
		routable = append(routable, st)
		if st.Serves(model) {
			serving = append(serving, st)
		}
	}
	if len(serving) == 0 {
		serving = routable
	}
	if len(serving) == 0 {
		return "", false
	}
	return serving[t.next.Add(1)%uint64(len(serving))].BaseURL(), true
}
