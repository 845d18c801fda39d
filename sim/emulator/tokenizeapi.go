package emulator

import (
	"net/http"
)

// tokenizeRequest is vLLM's POST /tokenize body: a completion's prompt, or a chat's messages,
// which are rendered with the chat template first (add_generation_prompt, vLLM's default, ends
// them with the generation prompt; the emulator's template always does).
type tokenizeRequest struct {
	Model    string        `json:"model"`
	Prompt   *string       `json:"prompt"`
	Messages []chatMessage `json:"messages"`
}

// handleTokenize answers POST /tokenize as vLLM does: {"count", "max_model_len", "tokens"}, the
// token ids the engine would compute for the prompt (Tokenize of it, or of the chat rendered).
func (s *Server) handleTokenize(w http.ResponseWriter, r *http.Request) {
	var req tokenizeRequest
	if err := decode(w, r, &req); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	var text string
	switch {
	case req.Prompt != nil && req.Messages == nil:
		text = *req.Prompt
	case req.Messages != nil && req.Prompt == nil:
		text = renderChat(req.Messages)
	default:
		writeError(w, http.StatusBadRequest, "give either prompt or messages")
		return
	}
	tokens := Tokenize(text)
	writeJSON(w, http.StatusOK, map[string]any{"count": len(tokens), "max_model_len": s.maxModelLen, "tokens": tokens})
}
