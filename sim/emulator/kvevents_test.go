package emulator

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/foresight-router/foresight/host/kvevents"
	"github.com/foresight-router/foresight/host/tokenize"
	"github.com/foresight-router/foresight/internal/eventually"
	"github.com/foresight-router/foresight/sim/engine"
)

// TestTokenizeAPI: POST /tokenize answers a prompt's or a chat's tokens, as the engine computes
// them for a completion or a chat completion.
func TestTokenizeAPI(t *testing.T) {
	_, ts := newTestServer(t)
	for _, tt := range []struct{ body, text string }{
		{`{"model":"m","prompt":"hello world"}`, "hello world"},
		{`{"model":"m","messages":[{"role":"user","content":"hi"}]}`, "<|user|>\nhi\n<|assistant|>\n"},
	} {
		resp := post(t, ts.URL+"/tokenize", tt.body)
		var got struct {
			Count  int      `json:"count"`
			Tokens []uint32 `json:"tokens"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: status %d, %v", tt.body, resp.StatusCode, err)
		}
		resp.Body.Close()
		if want := Tokenize(tt.text); !slices.Equal(got.Tokens, want) || got.Count != len(want) {
			t.Errorf("%s: tokens %v (count %d), want %v", tt.body, got.Tokens, got.Count, want)
		}
	}
	if resp := post(t, ts.URL+"/tokenize", `{"model":"m"}`); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("neither prompt nor messages: status %d, want 400", resp.StatusCode)
	}
}

// TestPublishesKVEvents: a server with WithKVEvents publishes the blocks a completion stores,
// with their tokens and parent, so that keys computed from the tokens are its block hashes.
func TestPublishesKVEvents(t *testing.T) {
	cfg, err := engine.Preset(testPreset)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewServer(cfg, "", WithKVEvents(0))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var got []kvevents.Event
	sub, err := kvevents.NewSubscriber(kvevents.SubscriberConfig{Address: s.KVEventsAddr(), Handle: func(m *kvevents.Message) {
		for _, ev := range m.Batch.Events {
			ev.Hashes, ev.Tokens = slices.Clone(ev.Hashes), slices.Clone(ev.Tokens)
			got = append(got, ev)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = sub.Run(ctx)
	}()
	eventually.Wait(t, 5*time.Second, "connected", func() bool { return sub.Stats().Connected })
	text := "the quick brown fox jumps over the lazy dog and keeps running through the field until night falls "
	tokens := Tokenize(text + text + text)
	if _, err := s.generate(ctx, job{tokens: tokens, maxTokens: 1}, nil, func(uint64, int) error { return nil }); err != nil {
		t.Fatal(err)
	}
	eventually.Wait(t, 5*time.Second, "the prompt's blocks published", func() bool { return sub.Stats().BlockEvents >= uint64(len(tokens)/16) })
	cancel()
	<-done // got is the subscriber's until Run returns
	keys := tokenize.BlockKeys(nil, 0, tokens, 16)
	var hashes []uint64
	for _, ev := range got {
		if ev.Kind != kvevents.Stored || ev.BlockSize != 16 || len(ev.Tokens) != 16*len(ev.Hashes) {
			t.Fatalf("event %+v: want BlockStored of 16-token blocks with their tokens", ev)
		}
		if parent := len(hashes); parent > 0 && (!ev.HasParent || ev.Parent != hashes[parent-1]) {
			t.Fatalf("event %+v: parent is not the block before", ev)
		}
		hashes = append(hashes, ev.Hashes...)
	}
	if !slices.Equal(hashes, keys) {
		t.Fatalf("published hashes %v, want the prompt's block keys %v", hashes, keys)
	}
}
