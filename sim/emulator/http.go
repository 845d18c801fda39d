package emulator

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// maxBodyBytes bounds a request body.
const maxBodyBytes = 64 << 20

// apiKind is the OpenAI endpoint a request came to.
type apiKind int

const (
	completions apiKind = iota
	chat
)

// call is one validated generation request.
type call struct {
	kind         apiKind
	prompt       string
	maxTokens    int
	stream       bool
	includeUsage bool
	pd           pdRequest // its part in a disaggregated request
}

func (s *Server) handleCompletions(w http.ResponseWriter, r *http.Request) {
	var req completionRequest
	if err := decode(w, r, &req); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	prompt, err := parsePrompt(req.Prompt)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	n, err := outputLength([]string{"max_tokens"}, req.MaxTokens)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	pd, ok := disaggregation(w, req.KVTransferParams, req.Stream)
	if !ok {
		return
	}
	s.serve(w, r, call{kind: completions, prompt: prompt, maxTokens: n, stream: req.Stream,
		includeUsage: req.StreamOptions != nil && req.StreamOptions.IncludeUsage, pd: pd})
}

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	if err := decode(w, r, &req); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if len(req.Messages) == 0 {
		writeError(w, http.StatusBadRequest, "messages is required and must not be empty")
		return
	}
	// vLLM: max_completion_tokens supersedes the deprecated max_tokens.
	n, err := outputLength([]string{"max_completion_tokens", "max_tokens"}, req.MaxCompletionTokens, req.MaxTokens)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	pd, ok := disaggregation(w, req.KVTransferParams, req.Stream)
	if !ok {
		return
	}
	s.serve(w, r, call{kind: chat, prompt: renderChat(req.Messages), maxTokens: n, stream: req.Stream,
		includeUsage: req.StreamOptions != nil && req.StreamOptions.IncludeUsage, pd: pd})
}

// disaggregation reads a request's kv_transfer_params (parseKVTransfer) and refuses a streamed
// prefill half, as llm-d-inference-sim does; on a refusal it writes the 400 and returns false.
func disaggregation(w http.ResponseWriter, raw json.RawMessage, stream bool) (pdRequest, bool) {
	pd, err := parseKVTransfer(raw)
	if err != nil {
		writeParamError(w, http.StatusBadRequest, err.Error(), kvParamsField)
		return pdRequest{}, false
	}
	if pd.role == pdPrefill && stream {
		writeParamError(w, http.StatusBadRequest, errPrefillStream, "stream")
		return pdRequest{}, false
	}
	return pd, true
}

func (s *Server) handleModels(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"object": "list",
		"data": []map[string]any{{
			"id": s.model, "object": "model", "created": s.start.Unix(), "owned_by": "vllm", "root": s.model,
		}},
	})
}

// serve runs c on the engine and writes the response, streamed or whole. A prefill half's (never
// streamed) answer ends by finish reason "remote_decode" and carries the kv_transfer_params the
// decode half passes on; a decode half runs as a remote-prefill engine request.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, c call) {
	created := time.Now().Unix()
	ids := func(id uint64) (string, string) {
		if c.kind == chat {
			return fmt.Sprintf("chatcmpl-%d", id), "chat.completion"
		}
		return fmt.Sprintf("cmpl-%d", id), "text_completion"
	}
	tokens := Tokenize(c.prompt)
	j := job{tokens: tokens, maxTokens: c.maxTokens, remotePrefill: c.pd.role == pdDecode}
	admitted := func(uint64) error {
		s.countPD(c.pd)
		return nil
	}
	if !c.stream {
		var text strings.Builder
		gen, err := s.generate(r.Context(), j, admitted, func(id uint64, k int) error {
			text.WriteString(fillerToken(id, k))
			return nil
		})
		if err != nil {
			s.fail(w, err)
			return
		}
		id, object := ids(gen.id)
		finish := "length"
		var kv *kvTransferOut
		if c.pd.role == pdPrefill {
			finish, kv = finishRemoteDecode, s.prefillParams(r, id, gen.id, tokens)
		}
		var choices any = []completionChoice{{Text: text.String(), FinishReason: &finish}}
		if c.kind == chat {
			choices = []chatChoice{{Message: &chatMessageOut{Role: "assistant", Content: text.String()}, FinishReason: &finish}}
		}
		writeJSON(w, http.StatusOK, response{ID: id, Object: object, Created: created, Model: s.model, Choices: choices,
			Usage: gen.usage(), KVTransferParams: kv})
		return
	}

	flusher, _ := w.(http.Flusher)
	started := false
	var chunkID, object string
	send := func(v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return err
		}
		if flusher != nil {
			flusher.Flush()
		}
		return nil
	}
	chunk := func(choices any, u *usage) response {
		return response{ID: chunkID, Object: object, Created: created, Model: s.model, Choices: choices, Usage: u}
	}
	gen, err := s.generate(r.Context(), j, admitted, func(id uint64, k int) error {
		text := fillerToken(id, k)
		if !started {
			started = true
			chunkID, object = ids(id)
			object += ".chunk"
			if c.kind == completions {
				object = "text_completion"
			}
			startSSE(w)
			if c.kind == chat {
				empty := ""
				if err := send(chunk([]chatChoice{{Delta: &chatDelta{Role: "assistant", Content: &empty}}}, nil)); err != nil {
					return err
				}
			}
		}
		if c.kind == chat {
			return send(chunk([]chatChoice{{Delta: &chatDelta{Content: &text}}}, nil))
		}
		return send(chunk([]completionChoice{{Text: text}}, nil))
	})
	if err != nil {
		if !started {
			s.fail(w, err)
		}
		return // a client that went away gets nothing more; the engine finishes the request
	}
	finish := "length"
	var final any = []completionChoice{{FinishReason: &finish}}
	if c.kind == chat {
		final = []chatChoice{{Delta: &chatDelta{}, FinishReason: &finish}}
	}
	if send(chunk(final, nil)) != nil {
		return
	}
	if c.includeUsage && send(chunk([]struct{}{}, gen.usage())) != nil {
		return
	}
	if _, err := fmt.Fprint(w, "data: [DONE]\n\n"); err == nil && flusher != nil {
		flusher.Flush()
	}
}

// fail writes the error of a generation that produced nothing.
func (s *Server) fail(w http.ResponseWriter, err error) {
	var re *requestError
	switch {
	case errors.As(err, &re):
		writeError(w, http.StatusBadRequest, re.Error())
	case errors.Is(err, errClosed):
		writeError(w, http.StatusServiceUnavailable, err.Error())
	default:
		// The client is gone (context canceled); nobody reads this.
		writeError(w, http.StatusServiceUnavailable, err.Error())
	}
}

// decode reads a JSON body into v.
func decode(w http.ResponseWriter, r *http.Request, v any) error {
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes)).Decode(v); err != nil {
		return fmt.Errorf("invalid JSON body: %v", err)
	}
	return nil
}

// startSSE writes the 200 header of a Server-Sent Events stream.
func startSSE(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError writes an OpenAI-style error.
func writeError(w http.ResponseWriter, status int, msg string) { writeParamError(w, status, msg, "") }

// writeParamError writes an OpenAI-style error naming the request field at fault (none when
// param is empty).
func writeParamError(w http.ResponseWriter, status int, msg, param string) {
	typ := "invalid_request_error"
	if status >= 500 {
		typ = "server_error"
	}
	writeJSON(w, status, errorBody{Error: errorDetail{Message: msg, Type: typ, Param: param, Code: status}})
}
