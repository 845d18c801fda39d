package openai

import (
	"bytes"
	"strings"
	"testing"
)

// chunkCases are stream chunks of every shape the relay meets, and shapes meant to trip a
// hand-written reader: each must read as encoding/json reads it.
var chunkCases = []string{
	// vLLM and SGLang chunks, completions and chat.
	`{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" lorem","logprobs":null,"finish_reason":null}]}`,
	`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`,
	`{"id":"c","choices":[{"index":0,"delta":{"content":" ipsum"},"logprobs":null,"finish_reason":null}],"usage":null}`,
	`{"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"length","stop_reason":null}]}`,
	`{"id":"c","choices":[],"usage":{"prompt_tokens":12,"total_tokens":20,"completion_tokens":8,"prompt_tokens_details":{"cached_tokens":4}}}`,
	`{"choices":[{"index":0,"delta":{"reasoning_content":"think"}}]}`,
	`{"choices":[{"index":0,"delta":{"reasoning":"","content":null}}]}`,
	`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":1}"}}]}}]}`,
	`{"choices":[{"index":0,"delta":{"tool_calls":[]}},{"index":1,"delta":{"function_call":{}}}]}`,
	`{"choices":[{"index":0,"delta":{"tool_calls":[ ]}}]}`,
	`{"choices":[{"index":1,"text":"b"},{"index":0,"text":"a"},{"index":0,"text":"c","delta":{"content":"d"}}]}`,
	`{"choices":[{"text":"line\nbreak \"quoted\" \u00e9 \ud83d\ude00"}]}`,
	`{"choices":[{"text":"bad \ud800 surrogate"}]}`,
	"{\"choices\":[{\"text\":\"invalid \xff utf-8\"}]}",
	` { "choices" : [ { "index" : 0 , "text" : "spaced" } ] , "usage" : { "completion_tokens" : 1 } } `,
	`{"choices":null,"usage":{}}`,
	`{"choices":[{"index":-0,"text":"x"}]}`,
	`{"choices":[{"index":2,"text":"x"}],"extra":[1,-2.5e+3,true,false,null,{"a":{"b":[]}},"s"]}`,
	`{}`,
	`null`,
	// Shapes that must be left to encoding/json, or rejected by both.
	`{"Choices":[{"index":0,"text":"case"}]}`,
	`{"choices":[{"INDEX":1,"text":"case"}]}`,
	`{"choices":[{"index":0,"delta":{"Content":"case"}}]}`,
	`{"\u0063hoices":[{"text":"escaped key"}]}`,
	`{"choices":[{"text":"first"}],"choices":[{"text":"second"}]}`,
	`{"choices":[{"index":0,"text":"a","text":"b"}]}`,
	`{"choices":[null,{"text":"x"}]}`,
	`{"choices":[{"index":1.0,"text":"x"}]}`,
	`{"choices":[{"index":1e0,"text":"x"}]}`,
	`{"choices":[{"index":99999999999999999999,"text":"x"}]}`,
	`{"choices":[{"index":null,"text":"x"}]}`,
	`{"choices":[{"index":0,"text":5}]}`,
	`{"choices":[{"index":0,"delta":"x"}]}`,
	`{"choices":{"index":0}}`,
	`{"choices":[{"index":0,"text":"x"}]} trailing`,
	`{"choices":[{"index":0,"text":"x"}],}`,
	`{"choices":[{"index":01,"text":"x"}]}`,
	`{"choices":[{"index":0,"text":"tab	inside"}]}`,
	`{"choices":[{"index":0,"text":"bad escape \x"}]}`,
	`{"a":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `,"choices":[{"text":"deep"}]}`,
	`{"choices":[{"index":0,"text":"x"}]`,
	`[1,2]`,
	`"string"`,
	``,
	`{"usage":nul}`,
	`{"x":-}`,
	`{"x":1.}`,
	`{"x":.5}`,
	`{"x":1e}`,
}

// TestReadChunkAgreesWithEncodingJSON checks readChunk against decodeChunk, the encoding/json
// reading, on every case, and that the usual chunks take the one-pass path.
func TestReadChunkAgreesWithEncodingJSON(t *testing.T) {
	for _, c := range chunkCases {
		checkChunk(t, []byte(c))
	}
	for _, c := range chunkCases[:5] {
		if _, ok := scanChunk([]byte(c)); !ok {
			t.Errorf("scanChunk gave up on a usual chunk: %s", c)
		}
	}
}

// FuzzReadChunk looks for a chunk that scanChunk reads differently from encoding/json.
func FuzzReadChunk(f *testing.F) {
	for _, c := range chunkCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkChunk(t, data) })
}

func checkChunk(t *testing.T, data []byte) {
	t.Helper()
	want, wantOK := decodeChunk(data)
	got, gotOK := readChunk(data)
	if gotOK != wantOK || got.choices != want.choices || got.content != want.content || got.text0 != want.text0 ||
		!bytes.Equal(got.usage, want.usage) || (got.usage == nil) != (want.usage == nil) {
		t.Errorf("%q:\nreadChunk   %+v, %v\nencoding/json %+v, %v", data, got, gotOK, want, wantOK)
	}
}
