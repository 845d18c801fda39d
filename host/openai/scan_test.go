package openai

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"testing"
)

// jsonTexts seed the one-pass readers' checks against encoding/json.
var jsonTexts = []string{
	`{"model":"m","prompt":"hi","stream":true,"max_tokens":16}`,
	`{"model":"m","messages":[{"role":"user","content":"a\nb \"c\" \\ \/ \b\f\r\t \u00e9 \ud83d\ude00"}]}`,
	` { "a" : 1 , "b" : [ 1 , 2 ] , "a" : { "c" : null } } `,
	`{"k\u0065y":1}`, "{\"k\xffy\":1}", `{"":0}`, `{}`, `[]`, `[ {} , [] , "" , 0 ]`, `null`, `"s"`,
	`"\ud800"`, `"\ud800\u0041"`, `"\udc00\ud800"`, `"\ud83d\ude00\ud83d"`, `"\uD83D\uDE00"`, "\"\xff\xfe ok\"",
	`"\u0000"`, `"tab	"`, `"\x"`, `"\u12"`, `"unterminated`, `{"a":1,}`, `[1,]`, `{"a" 1}`, `{"a":01}`, `{"a":-}`,
	`{"a":1e5,"b":-0.5E-3,"c":true,"d":false}`, `{"a":[[[[[[]]]]]]}`,
}

// FuzzUnescape checks that scanner.str accepts exactly the string literals encoding/json does,
// and that unescape decodes them as it does.
func FuzzUnescape(f *testing.F) {
	for _, s := range jsonTexts {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var want string
		err := json.Unmarshal(data, &want)
		isLiteral := err == nil && len(data) >= 2 && data[0] == '"' && data[len(data)-1] == '"'
		s := scanner{b: data}
		_, valid := s.str()
		if valid = valid && s.i == len(data); valid != isLiteral {
			t.Fatalf("%q: scanner.str says valid %v; encoding/json %q, %v", data, valid, want, err)
		}
		if !valid {
			return
		}
		if got := unescape(data); got != want {
			t.Errorf("%q: unescape %q; encoding/json %q", data, got, want)
		}
	})
}

func FuzzObjectMembers(f *testing.F) {
	fuzzAgainstJSON(f, objectMembers, func(a, b map[string]json.RawMessage) bool { return maps.EqualFunc(a, b, rawEqual) })
}

func FuzzArrayElements(f *testing.F) {
	fuzzAgainstJSON(f, arrayElements, func(a, b []json.RawMessage) bool { return slices.EqualFunc(a, b, rawEqual) })
}

// fuzzAgainstJSON checks that whatever read accepts, json.Unmarshal reads into an equal T.
func fuzzAgainstJSON[T any](f *testing.F, read func([]byte) (T, bool), equal func(a, b T) bool) {
	for _, s := range jsonTexts {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, ok := read(data)
		if !ok {
			return
		}
		var want T
		if err := json.Unmarshal(data, &want); err != nil || !equal(got, want) {
			t.Errorf("%q: one-pass %v; encoding/json %v, %v", data, got, want, err)
		}
	})
}

func rawEqual(a, b json.RawMessage) bool { return bytes.Equal(a, b) }

// TestOnePassReadersTakeTheUsualText checks that the usual request bodies and strings are read in
// one pass, not handed to encoding/json.
func TestOnePassReadersTakeTheUsualText(t *testing.T) {
	if _, ok := objectMembers([]byte(jsonTexts[1])); !ok {
		t.Errorf("objectMembers gave up on %s", jsonTexts[1])
	}
	if _, ok := arrayElements([]byte(`[{"role":"user","content":"x"}, 1]`)); !ok {
		t.Error("arrayElements gave up on a usual array")
	}
	if s, ok := decodeString([]byte(`"a\nb\u00e9\ud83d\ude00"`)); !ok || s != "a\nbé😀" {
		t.Errorf("decodeString = %q, %v", s, ok)
	}
}
