package emulator

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"net/http"
	"sync"
	"time"

	"github.com/foresight-router/foresight/internal/splitmix"
)

// Embedding vector sizes: the default, and the largest "dimensions" a request may ask for.
const (
	defaultEmbeddingDims = 8
	maxEmbeddingDims     = 4096
)

// embeddingRequest is the part of a /v1/embeddings body the emulator reads. Other fields,
// "stream" among them, are ignored, as vLLM ignores fields its request model lacks.
type embeddingRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat string          `json:"encoding_format"`
	Dimensions     *int            `json:"dimensions"`
}

// embeddingData is one input's embedding: Embedding is a []float32, or a base64 string of its
// little-endian float32 bytes.
type embeddingData struct {
	Object    string `json:"object"`
	Index     int    `json:"index"`
	Embedding any    `json:"embedding"`
}

// embeddingUsage is an embeddings answer's usage: prompt tokens only.
type embeddingUsage struct {
	PromptTokens int `json:"prompt_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

type embeddingResponse struct {
	ID      string          `json:"id"`
	Object  string          `json:"object"`
	Created int64           `json:"created"`
	Model   string          `json:"model"`
	Data    []embeddingData `json:"data"`
	Usage   embeddingUsage  `json:"usage"`
}

func (s *Server) handleEmbeddings(w http.ResponseWriter, r *http.Request) {
	var req embeddingRequest
	if err := decode(w, r, &req); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	inputs, err := parseEmbeddingInput(req.Input)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if req.EncodingFormat != "" && req.EncodingFormat != "float" && req.EncodingFormat != "base64" {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("encoding_format must be \"float\" or \"base64\", got %q", req.EncodingFormat))
		return
	}
	dims := defaultEmbeddingDims
	if req.Dimensions != nil {
		if *req.Dimensions < 1 || *req.Dimensions > maxEmbeddingDims {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("dimensions must be in [1, %d], got %d", maxEmbeddingDims, *req.Dimensions))
			return
		}
		dims = *req.Dimensions
	}
	created := time.Now().Unix()
	if err := s.prefill(r.Context(), inputs); err != nil {
		s.fail(w, err)
		return
	}
	resp := embeddingResponse{
		ID: fmt.Sprintf("embd-%d", s.nextID.Add(1)), Object: "list", Created: created, Model: s.model,
		Data: make([]embeddingData, len(inputs)),
	}
	for i, tokens := range inputs {
		vec := embed(tokens, dims)
		var e any = vec
		if req.EncodingFormat == "base64" {
			e = encodeFloat32s(vec)
		}
		resp.Data[i] = embeddingData{Object: "embedding", Index: i, Embedding: e}
		resp.Usage.PromptTokens += len(tokens)
	}
	resp.Usage.TotalTokens = resp.Usage.PromptTokens
	writeJSON(w, http.StatusOK, resp)
}

// prefill runs one prefill-only engine request per input, concurrently, as vLLM's embeddings
// endpoint does, and returns when every prefill has ended. The first error (a refused input, the
// server closing, the client leaving) cancels the others.
func (s *Server) prefill(ctx context.Context, inputs [][]uint32) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, len(inputs))
	var wg sync.WaitGroup
	for i, tokens := range inputs {
		wg.Go(func() {
			_, err := s.generate(ctx, job{tokens: tokens}, nil, nil)
			if re := (*requestError)(nil); errors.As(err, &re) {
				err = &requestError{err: fmt.Errorf("input %d: %w", i, re.err)}
			}
			if errs[i] = err; err != nil {
				cancel()
			}
		})
	}
	wg.Wait()
	// The cause comes first: the others' context.Canceled only follows it.
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
	}
	return errors.Join(errs...)
}

// parseEmbeddingInput returns the token ids of each input: a string, an array of strings (each
// tokenized with Tokenize), an array of token ids, or an array of arrays of token ids (taken
// as they are).
func parseEmbeddingInput(raw json.RawMessage) ([][]uint32, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, errors.New("input is required")
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return [][]uint32{Tokenize(text)}, nil
	}
	var texts []string
	if json.Unmarshal(raw, &texts) == nil {
		if len(texts) == 0 {
			return nil, errors.New("input must not be an empty array")
		}
		out := make([][]uint32, len(texts))
		for i, t := range texts {
			out[i] = Tokenize(t)
		}
		return out, nil
	}
	var ids []int64
	if json.Unmarshal(raw, &ids) == nil {
		tokens, err := tokenIDs(ids, "input")
		if err != nil {
			return nil, err
		}
		return [][]uint32{tokens}, nil
	}
	var lists [][]int64
	if json.Unmarshal(raw, &lists) == nil {
		out := make([][]uint32, len(lists))
		for i, l := range lists {
			tokens, err := tokenIDs(l, fmt.Sprintf("input[%d]", i))
			if err != nil {
				return nil, err
			}
			out[i] = tokens
		}
		return out, nil
	}
	return nil, errors.New("input must be a string, an array of strings, an array of token ids or an array of arrays of token ids")
}

// tokenIDs checks a prompt of token ids: not empty, each id in [0, 2^32).
func tokenIDs(ids []int64, where string) ([]uint32, error) {
	if len(ids) == 0 {
		return nil, fmt.Errorf("%s must not be an empty array", where)
	}
	out := make([]uint32, len(ids))
	for j, id := range ids {
		if id < 0 || id > math.MaxUint32 {
			return nil, fmt.Errorf("%s[%d] is not a token id: %d is outside [0, %d]", where, j, id, uint32(math.MaxUint32))
		}
		out[j] = uint32(id)
	}
	return out, nil
}

// embed returns a deterministic unit vector of dims components for a prompt: component j is a
// splitmix64 draw keyed by the FNV-1a hash of the token ids and j, mapped to [−1, 1), and the
// vector is normalized (vLLM normalizes embeddings by default). Equal prompts give equal vectors.
func embed(tokens []uint32, dims int) []float32 {
	h := fnv.New64a()
	var b [4]byte
	for _, t := range tokens {
		binary.LittleEndian.PutUint32(b[:], t)
		h.Write(b[:])
	}
	seed := h.Sum64()
	raw := make([]float64, dims)
	norm := 0.0
	for j := range raw {
		raw[j] = float64(splitmix.Mix(seed+uint64(j))>>11)/(1<<52) - 1
		norm += raw[j] * raw[j]
	}
	norm = math.Sqrt(norm)
	vec := make([]float32, dims)
	for j, v := range raw {
		if norm > 0 {
			vec[j] = float32(v / norm)
		}
	}
	return vec
}

// encodeFloat32s is OpenAI's base64 encoding of an embedding: its float32 values,
// little-endian, base64 with padding.
func encodeFloat32s(vec []float32) string {
	b := make([]byte, 4*len(vec))
	for i, v := range vec {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return base64.StdEncoding.EncodeToString(b)
}
