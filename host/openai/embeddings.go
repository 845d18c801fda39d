package openai

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// embeddingsAccepted is what an embeddings input may be, for error messages.
const embeddingsAccepted = "input must be a non-empty string, an array of non-empty strings, an array of token ids (integers) or an array of non-empty arrays of token ids"

// embeddingsInput reads an embeddings request's input: a string, an array of strings, an array
// of token ids, or an array of arrays of token ids, none of them empty. It returns the text (the
// strings joined by "\n") or, for token-id input, "" and the number of ids.
func embeddingsInput(raw map[string]json.RawMessage) (text string, tokens int64, _ *Error) {
	v := raw["input"]
	if isNull(v) {
		return "", 0, BadRequest("input", "input is required (%s)", strings.TrimPrefix(embeddingsAccepted, "input must be "))
	}
	if s, ok := decodeString(v); ok {
		if s == "" {
			return "", 0, BadRequest("input", "%s, got an empty string", embeddingsAccepted)
		}
		return s, 0, nil
	}
	items, ok := arrayElements(v)
	if !ok && json.Unmarshal(v, &items) != nil {
		return "", 0, BadRequest("input", "%s, got %s", embeddingsAccepted, jsonType(v))
	}
	if len(items) == 0 {
		return "", 0, BadRequest("input", "%s, got an empty array", embeddingsAccepted)
	}
	switch jsonType(items[0]) {
	case "a string":
		return embeddingStrings(items)
	case "a number":
		n, err := tokenIDs(items, "input")
		return "", n, err
	case "an array":
		var total int64
		for i, item := range items {
			param := fmt.Sprintf("input[%d]", i)
			ids, ok := arrayElements(item)
			if !ok && json.Unmarshal(item, &ids) != nil {
				return "", 0, BadRequest(param, "%s must be an array of token ids like input[0], got %s", param, jsonType(item))
			}
			if len(ids) == 0 {
				return "", 0, BadRequest(param, "%s must not be an empty array of token ids", param)
			}
			n, err := tokenIDs(ids, param)
			if err != nil {
				return "", 0, err
			}
			total += n
		}
		return "", total, nil
	}
	return "", 0, BadRequest("input[0]", "%s, got an array holding %s", embeddingsAccepted, jsonType(items[0]))
}

// embeddingStrings joins an input array of strings by "\n".
func embeddingStrings(items []json.RawMessage) (string, int64, *Error) {
	var b strings.Builder
	for i, item := range items {
		s, ok := decodeString(item)
		param := fmt.Sprintf("input[%d]", i)
		if !ok {
			return "", 0, BadRequest(param, "%s must be a string like input[0], got %s", param, jsonType(item))
		}
		if s == "" {
			return "", 0, BadRequest(param, "%s must not be an empty string", param)
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(s)
	}
	return b.String(), 0, nil
}

// tokenIDs checks that ids, the elements of the array param, are token ids (non-negative
// integers) and returns how many there are.
func tokenIDs(ids []json.RawMessage, param string) (int64, *Error) {
	for j, id := range ids {
		if !isTokenID(id) {
			p := fmt.Sprintf("%s[%d]", param, j)
			got := jsonType(id)
			if got == "a number" {
				got = string(id)
			}
			return 0, BadRequest(p, "%s must be a token id (a non-negative integer), got %s", p, Clip(got))
		}
	}
	return int64(len(ids)), nil
}

// isTokenID reports whether raw, a valid JSON value, is a non-negative whole number (2.0 too,
// as for max_tokens: pydantic reads it as the integer 2).
func isTokenID(raw json.RawMessage) bool {
	digits := len(raw) > 0
	for _, c := range raw {
		if c < '0' || c > '9' {
			digits = false
			break
		}
	}
	if digits {
		return true // the usual id: no parse needed
	}
	if jsonType(raw) != "a number" {
		return false
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	return err == nil && f >= 0 && f == math.Trunc(f)
}
