package config_test

import (
	"strings"
	"testing"

	"github.com/foresight-router/foresight/host/config"
)

func TestParseKVEventsErrors(t *testing.T) {
	for _, tc := range []struct{ section, want string }{
		{"kvEvents: {}", `kvEvents.tokenizer: is required`},
		{"kvEvents: {tokenizer: gpt2}", `kvEvents.tokenizer: "gpt2" is not a tokenizer`},
		{"kvEvents: {tokenizer: vllm, tokenizeTimeout: -1s}", `kvEvents.tokenizeTimeout: must be positive`},
		{"endpoints: {static: [{address: 'a:1', kvEvents: 'tcp://a:2'}]}", `endpoints.static[0].kvEvents: reading KV-cache events needs the kvEvents section`},
		{"kvEvents: {tokenizer: vllm}\nendpoints: {static: [{address: 'a:1', kvEvents: 'udp://a:2'}]}", `endpoints.static[0].kvEvents: kvevents: address "udp://a:2": transport "udp" is not supported`},
		{"kvEvents: {tokenizer: vllm}\nendpoints: {static: [{address: 'a:1', kvEvents: 'tcp://*:2'}]}", `a subscriber needs a host and a port`},
		{"kvEvents: {tokenizer: vllm}\nendpoints: {static: [{address: 'a:1', kvEventsReplay: 'tcp://a:3'}]}", `endpoints.static[0].kvEventsReplay: a replay address needs the publisher's, kvEvents`},
		{"endpoints: {kubernetes: {selector: {app: v}, targetPort: 8000, kvEventsPort: 5557}}", `endpoints.kubernetes.kvEventsPort: reading KV-cache events needs the kvEvents section`},
	} {
		_, err := config.Parse("test.yaml", []byte(twoProfiles+tc.section))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.section, err, tc.want)
		}
	}
	cfg, err := config.Parse("test.yaml", []byte(twoProfiles+"kvEvents: {tokenizer: vllm}\nendpoints: {static: [{address: 'a:1', kvEvents: 'tcp://a:2', kvEventsReplay: 'tcp://a:3'}]}"))
	if err != nil {
		t.Fatal(err)
	}
	if k := cfg.KVEvents; k.TokenizeTimeout != config.DefaultTokenizeTimeout || cfg.Endpoints.Static[0].KVEvents != "tcp://a:2" {
		t.Errorf("parsed %+v, %+v", *k, cfg.Endpoints.Static[0])
	}
}
