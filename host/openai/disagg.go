package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Prefill/decode disaggregation on the wire: vLLM's KV connector protocol, as its disaggregated
// serving proxies and llm-d's routing sidecar speak it (docs/configuration.md, "Prefill/decode
// disaggregation"). The prefill hop is the request with max_tokens 1, unstreamed, and
// kv_transfer_params asking the engine to keep the prompt's KV for a remote decode; its answer's
// kv_transfer_params name where those blocks are; the decode hop is the client's request with
// those parameters, so that the decode engine pulls the blocks instead of computing the prompt.

// prefillParams are the kv_transfer_params of a prefill hop: decode elsewhere, nothing to pull.
var prefillParams = json.RawMessage(`{"do_remote_decode":true,"do_remote_prefill":false,"remote_engine_id":null,"remote_block_ids":null,"remote_host":null,"remote_port":null}`)

// Disaggregable reports whether the request can be split into a prefill hop and a decode hop:
// completions and chat completions, the two APIs vLLM's KV connector serves.
func (r *Request) Disaggregable() bool { return r.Kind == Completions || r.Kind == Chat }

// PrefillBody returns the body of the request's prefill hop: UpstreamBody's model, stream false
// without stream_options, max_tokens 1 (and max_completion_tokens 1 when the client gave it), and
// kv_transfer_params asking for a remote decode. Only for Disaggregable requests.
func (r *Request) PrefillBody() ([]byte, error) {
	if !r.Disaggregable() {
		return nil, fmt.Errorf("a %v request has no prefill hop", r.Kind)
	}
	fields, err := r.fields()
	if err != nil {
		return nil, err
	}
	delete(fields, "stream_options")
	one := json.RawMessage("1")
	fields["stream"], fields["max_tokens"], fields["kv_transfer_params"] = json.RawMessage("false"), one, prefillParams
	if _, ok := fields["max_completion_tokens"]; ok {
		fields["max_completion_tokens"] = one
	}
	out, err := encode(fields)
	if err != nil {
		return nil, fmt.Errorf("encoding the prefill request: %w", err)
	}
	return out, nil
}

// DecodeBody returns upstream (the request's UpstreamBody) with kv_transfer_params set to params,
// the prefill answer's (PrefillAnswer). The client's own kv_transfer_params, if it sent any, are
// replaced: the router decides where the prompt is computed.
func (r *Request) DecodeBody(upstream []byte, params json.RawMessage) ([]byte, error) {
	if _, sent := r.raw["kv_transfer_params"]; !sent { // the common case, no re-encoding
		member := make([]byte, 0, len(params)+len(`"kv_transfer_params":,`))
		member = append(append(append(member, `"kv_transfer_params":`...), params...), ',')
		return insertFirst(upstream, member), nil
	}
	fields := map[string]json.RawMessage{}
	if err := json.Unmarshal(upstream, &fields); err != nil {
		return nil, fmt.Errorf("re-encoding the decode request: %w", err)
	}
	fields["kv_transfer_params"] = params
	out, err := encode(fields)
	if err != nil {
		return nil, fmt.Errorf("re-encoding the decode request: %w", err)
	}
	return out, nil
}

// PrefillAnswer returns the kv_transfer_params of a prefill hop's answer: a JSON object the
// decode hop passes on. An answer without them (an engine with no KV connector, which served the
// request whole) is an error: its KV cannot be pulled.
func PrefillAnswer(data []byte) (json.RawMessage, error) {
	var a struct {
		Params json.RawMessage `json:"kv_transfer_params"`
	}
	if err := json.Unmarshal(data, &a); err != nil {
		return nil, fmt.Errorf("the prefill answer is not a JSON object: %w", err)
	}
	p := bytes.TrimSpace(a.Params)
	if len(p) == 0 || isNull(p) {
		return nil, fmt.Errorf("the prefill answer has no kv_transfer_params: the engine runs no KV connector")
	}
	if p[0] != '{' {
		return nil, fmt.Errorf("the prefill answer's kv_transfer_params is %s, not an object", jsonType(p))
	}
	return p, nil
}
