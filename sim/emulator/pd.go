package emulator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/foresight-router/foresight/internal/splitmix"
	"github.com/foresight-router/foresight/sim/engine"
)

// Prefill/decode disaggregation on the wire, as vLLM's NIXL KV connector and llm-d-inference-sim
// speak it: a request's top-level kv_transfer_params make it the prefill half of a disaggregated
// request (do_remote_decode: the server computes the prompt and says where its KV blocks are)
// or its decode half (do_remote_prefill: the server pulls those blocks from the prefill server
// named, then decodes). README.md ("Prefill/decode disaggregation") gives the wire format.

// pdRole is what a request's kv_transfer_params make of it.
type pdRole int

const (
	pdNone    pdRole = iota // no kv_transfer_params, or neither flag set
	pdPrefill               // do_remote_decode: the prefill half
	pdDecode                // do_remote_prefill: the decode half
)

// pdRequest is a request's part in a disaggregated request.
type pdRequest struct {
	role pdRole
	// remoteEngine is the decode half's remote_engine_id: the prefill server holding the KV.
	remoteEngine string
}

// kvParamsField is the request field the disaggregation errors name.
const kvParamsField = "kv_transfer_params"

// finishRemoteDecode is the finish reason of a prefill half's answer (llm-d-inference-sim's).
const finishRemoteDecode = "remote_decode"

// errPrefillStream is llm-d-inference-sim's refusal of a streamed prefill half.
const errPrefillStream = "Prefill does not support streaming"

// parseKVTransfer reads a request's kv_transfer_params: absent or null is no disaggregation; an
// object gives the role its flags select. It refuses, naming what is wrong, a value that is not
// an object, a field of the wrong type, both flags set, and a decode half without
// remote_engine_id, remote_host and remote_port. Fields it does not know (remote_request_id,
// transfer_id, …) are ignored, as vLLM passes them to its connector.
func parseKVTransfer(raw json.RawMessage) (pdRequest, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return pdRequest{}, nil
	}
	if raw[0] != '{' {
		return pdRequest{}, fmt.Errorf("%s must be an object, got %s", kvParamsField, clip(raw))
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return pdRequest{}, fmt.Errorf("%s: %v", kvParamsField, err)
	}
	var p struct {
		decode, prefill bool
		engine, host    *string
		port, tpSize    *int
		blockIDs        *[]json.RawMessage
	}
	for _, f := range []struct {
		name string
		dst  any
		want string
	}{
		{"do_remote_decode", &p.decode, "a boolean"},
		{"do_remote_prefill", &p.prefill, "a boolean"},
		{"remote_engine_id", &p.engine, "a string or null"},
		{"remote_host", &p.host, "a string or null"},
		{"remote_port", &p.port, "an integer or null"},
		{"remote_block_ids", &p.blockIDs, "an array or null"},
		{"tp_size", &p.tpSize, "an integer"},
	} {
		v, ok := fields[f.name]
		if !ok {
			continue
		}
		if err := json.Unmarshal(v, f.dst); err != nil {
			return pdRequest{}, fmt.Errorf("%s.%s must be %s, got %s", kvParamsField, f.name, f.want, clip(v))
		}
	}
	switch {
	case p.decode && p.prefill:
		return pdRequest{}, fmt.Errorf("%s: do_remote_decode and do_remote_prefill cannot both be true: "+
			"a request is either the prefill half (do_remote_decode) or the decode half (do_remote_prefill)", kvParamsField)
	case p.decode:
		return pdRequest{role: pdPrefill}, nil
	case !p.prefill:
		return pdRequest{}, nil
	}
	var missing []string
	if p.engine == nil || *p.engine == "" {
		missing = append(missing, "remote_engine_id")
	}
	if p.host == nil || *p.host == "" {
		missing = append(missing, "remote_host")
	}
	if p.port == nil {
		missing = append(missing, "remote_port")
	} else if *p.port < 1 || *p.port > 65535 {
		return pdRequest{}, fmt.Errorf("%s.remote_port must be a port in [1, 65535], got %d", kvParamsField, *p.port)
	}
	if len(missing) > 0 {
		return pdRequest{}, fmt.Errorf("%s: a decode request (do_remote_prefill: true) needs remote_engine_id, remote_host "+
			"and remote_port to pull the prompt's KV from its prefill server; missing or null: %s",
			kvParamsField, strings.Join(missing, ", "))
	}
	return pdRequest{role: pdDecode, remoteEngine: *p.engine}, nil
}

// clip returns raw JSON for an error message, cut to 64 bytes.
func clip(raw []byte) string {
	if len(raw) > 64 {
		return string(raw[:64]) + "…"
	}
	return string(raw)
}

// kvTransferOut is the kv_transfer_params of a prefill half's answer: where the decode server
// pulls the prompt's KV blocks from. The decode half sends them back with do_remote_prefill.
type kvTransferOut struct {
	DoRemoteDecode  bool    `json:"do_remote_decode"`
	DoRemotePrefill bool    `json:"do_remote_prefill"`
	RemoteEngineID  string  `json:"remote_engine_id"`
	RemoteBlockIDs  []int64 `json:"remote_block_ids"`
	RemoteHost      string  `json:"remote_host"`
	RemotePort      int     `json:"remote_port"`
	TPSize          int     `json:"tp_size"`
	// RemoteRequestID is the prefill request's id, which vLLM's NIXL connector also returns.
	RemoteRequestID string `json:"remote_request_id"`
}

// EngineID is the remote_engine_id a server listening at hostport (host:port) gives in its
// prefill answers: stable for the server, distinct between servers.
func EngineID(hostport string) string { return "foresight-emulator@" + hostport }

// prefillParams returns the kv_transfer_params answering the prefill half responseID of prompt
// tokens (engine request id), served on r's connection: this server's engine id, host and port
// (the address r reached it at), and the ids of the prompt's blocks. vLLM names the physical
// blocks in [1, num_gpu_blocks); here block i of the prompt is named by its block hash reduced
// to that range (the partial last block by a hash of the request), so equal prefixes name equal
// blocks, as they share blocks in a prefix cache.
func (s *Server) prefillParams(r *http.Request, responseID string, id uint64, tokens []uint32) *kvTransferOut {
	hostport := r.Host
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		hostport = a.String()
	}
	host, portText, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	port, _ := strconv.Atoi(portText)
	hashes := BlockHashes(tokens, s.block)
	n := (len(tokens) + s.block - 1) / s.block
	ids := make([]int64, n)
	span := uint64(max(s.numBlocks-1, 1))
	for i := range ids {
		var h uint64
		if i < len(hashes) {
			h = hashes[i]
		} else {
			h = splitmix.Mix(splitmix.Mix(id) + uint64(i))
		}
		ids[i] = int64(1 + h%span)
	}
	return &kvTransferOut{
		DoRemotePrefill: true,
		RemoteEngineID:  EngineID(hostport),
		RemoteBlockIDs:  ids,
		RemoteHost:      host,
		RemotePort:      port,
		TPSize:          1,
		RemoteRequestID: responseID,
	}
}

// PDStats counts the disaggregated requests a Server's engine accepted.
type PDStats struct {
	// Prefills is the prefill halves: requests with kv_transfer_params.do_remote_decode.
	Prefills int64
	// Decodes is the decode halves: requests with kv_transfer_params.do_remote_prefill, run as
	// engine requests with RemotePrefill.
	Decodes int64
	// RemoteEngines counts the decode halves by the remote_engine_id they named.
	RemoteEngines map[string]int64
}

// PD returns the server's disaggregation counters (a copy).
func (s *Server) PD() PDStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pd
	p.RemoteEngines = maps.Clone(p.RemoteEngines)
	if p.RemoteEngines == nil {
		p.RemoteEngines = map[string]int64{}
	}
	return p
}

// countPD counts an accepted request's part in a disaggregated request.
func (s *Server) countPD(p pdRequest) {
	if p.role == pdNone {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if p.role == pdPrefill {
		s.pd.Prefills++
		return
	}
	s.pd.Decodes++
	if s.pd.RemoteEngines == nil {
		s.pd.RemoteEngines = map[string]int64{}
	}
	s.pd.RemoteEngines[p.remoteEngine]++
}

// WithKVTransferLatency sets the fixed part of the server's KV transfer (engine
// Config.KVTransfer.Latency, foresight emulate --kv-cache-transfer-latency), in place of its
// preset's. NewServer refuses a negative one.
func WithKVTransferLatency(d time.Duration) Option {
	return func(s *Server) { s.edits = append(s.edits, func(c *engine.Config) { c.KVTransfer.Latency = d }) }
}

// WithKVTransferPerToken sets the server's KV transfer time per token (engine
// Config.KVTransfer.PerToken, foresight emulate --kv-cache-transfer-time-per-token), in place of
// its preset's. NewServer refuses a negative one.
func WithKVTransferPerToken(d time.Duration) Option {
	return func(s *Server) { s.edits = append(s.edits, func(c *engine.Config) { c.KVTransfer.PerToken = d }) }
}
