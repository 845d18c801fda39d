package openai

import (
	"bytes"
	"encoding/json"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// scanner walks JSON text in b from i, checking it as it goes. Every method skips leading
// whitespace and reports false when the text there is not what it reads (or not JSON); the
// scanner is then in no defined place. It serves scanChunk, which gives up on any false.
type scanner struct {
	b []byte
	i int
}

// maxScanDepth bounds the nesting value descends into; deeper text is left to encoding/json.
const maxScanDepth = 64

// space skips JSON whitespace.
func (s *scanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// byte reads the character c.
func (s *scanner) byte(c byte) bool {
	s.space()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// literal reads lit (true, false, null).
func (s *scanner) literal(lit string) bool {
	s.space()
	if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
		s.i += len(lit)
		return true
	}
	return false
}

// members reads an object's members after its '{' through its '}', calling value with each key
// (without its quotes) once the scanner stands before the member's value; value reads the value.
// A key with an escape is not read (it may spell a field's name).
func (s *scanner) members(value func(key []byte) bool) bool {
	if s.byte('}') {
		return true
	}
	for {
		s.space()
		start := s.i
		escaped, ok := s.str()
		end := s.i - 1 // the closing quote
		if !ok || escaped || !s.byte(':') {
			return false
		}
		if !value(s.b[start+1 : end]) {
			return false
		}
		if s.byte(',') {
			continue
		}
		return s.byte('}')
	}
}

// elements reads an array's elements after its '[' through its ']', calling value for each.
func (s *scanner) elements(value func() bool) bool {
	if s.byte(']') {
		return true
	}
	for {
		if !value() {
			return false
		}
		if s.byte(',') {
			continue
		}
		return s.byte(']')
	}
}

// value reads any JSON value nested depth deep.
func (s *scanner) value(depth int) bool {
	if depth > maxScanDepth {
		return false
	}
	s.space()
	if s.i >= len(s.b) {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '{':
		s.i++
		return s.members(func([]byte) bool { return s.value(depth + 1) })
	case c == '[':
		s.i++
		return s.elements(func() bool { return s.value(depth + 1) })
	case c == '"':
		_, ok := s.str()
		return ok
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	}
	return s.number()
}

// raw reads any JSON value and returns its text, without the whitespace around it.
func (s *scanner) raw() ([]byte, bool) {
	s.space()
	start := s.i
	if !s.value(0) {
		return nil, false
	}
	return s.b[start:s.i:s.i], true
}

// str reads a string, checking its escapes; escaped says whether it had any.
func (s *scanner) str() (escaped, ok bool) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return false, false
	}
	for s.i++; s.i < len(s.b); s.i++ {
		switch c := s.b[s.i]; {
		case c == '"':
			s.i++
			return escaped, true
		case c < 0x20:
			return false, false
		case c == '\\':
			escaped = true
			s.i++
			if s.i >= len(s.b) {
				return false, false
			}
			switch s.b[s.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if len(s.b)-s.i < 5 || !isHex(s.b[s.i+1]) || !isHex(s.b[s.i+2]) || !isHex(s.b[s.i+3]) || !isHex(s.b[s.i+4]) {
					return false, false
				}
				s.i += 4
			default:
				return false, false
			}
		}
	}
	return false, false
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

// optString reads a string or null ("") as encoding/json decodes it into a *string.
func (s *scanner) optString() (string, bool) {
	if s.literal("null") {
		return "", true
	}
	start := s.i
	if _, ok := s.str(); !ok {
		return "", false
	}
	return decodeString(s.b[start:s.i])
}

// integer reads a number that encoding/json decodes into an int: an optional minus and digits,
// at most 18 of them (longer ones are left to encoding/json).
func (s *scanner) integer() (int64, bool) {
	span, ok := s.raw()
	if !ok || span[0] == '"' || span[0] == '{' || span[0] == '[' || span[0] > '9' {
		return 0, false // not a number
	}
	digits := bytes.TrimPrefix(span, []byte("-"))
	if len(digits) > 18 || bytes.ContainsAny(digits, ".eE") {
		return 0, false
	}
	var n int64
	for _, c := range digits {
		n = n*10 + int64(c-'0')
	}
	if len(digits) < len(span) {
		n = -n
	}
	return n, true
}

// number reads a JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) number() bool {
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i < len(s.b) && s.b[s.i] == '0':
		s.i++
	case s.digits() == 0:
		return false
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if s.digits() == 0 {
			return false
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if s.digits() == 0 {
			return false
		}
	}
	return true
}

// digits skips decimal digits and returns how many.
func (s *scanner) digits() int {
	n := 0
	for ; s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9'; s.i++ {
		n++
	}
	return n
}

// objectMembers reads data, a JSON object, into its members' raw values as encoding/json reads
// it into a map[string]json.RawMessage (the last of repeated keys wins), in one pass. ok is false
// when data is not an object or when it is unsure: a key with an escape or invalid UTF-8 (which
// encoding/json would decode), deep nesting, or invalid JSON.
func objectMembers(data []byte) (map[string]json.RawMessage, bool) {
	s := scanner{b: data}
	if !s.byte('{') {
		return nil, false
	}
	m := make(map[string]json.RawMessage, 8)
	ok := s.members(func(key []byte) bool {
		v, ok := s.raw()
		if !ok || !utf8.Valid(key) {
			return false
		}
		m[string(key)] = v
		return true
	})
	s.space()
	if !ok || s.i != len(data) {
		return nil, false
	}
	return m, true
}

// arrayElements reads data, a JSON array, into its elements' raw values as encoding/json reads it
// into a []json.RawMessage, in one pass; ok is false when it is not an array or is unsure.
func arrayElements(data []byte) ([]json.RawMessage, bool) {
	s := scanner{b: data}
	if !s.byte('[') {
		return nil, false
	}
	var out []json.RawMessage
	ok := s.elements(func() bool {
		v, ok := s.raw()
		out = append(out, v)
		return ok
	})
	s.space()
	if !ok || s.i != len(data) {
		return nil, false
	}
	return out, true
}

// unescape decodes raw, a valid JSON string with its quotes (checked by scanner.str or by the
// decode that produced it), as encoding/json decodes it into a string: escapes decoded, a \u
// escape of a lone surrogate and every byte of invalid UTF-8 replaced by U+FFFD.
func unescape(raw []byte) string {
	in := raw[1 : len(raw)-1]
	out := make([]byte, 0, len(in))
	for i := 0; i < len(in); {
		c := in[i]
		switch {
		case c == '\\':
			i++
			switch e := in[i]; e {
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r := hex4(in[i+1 : i+5])
				i += 4
				if utf16.IsSurrogate(r) {
					if len(in)-i > 6 && in[i+1] == '\\' && in[i+2] == 'u' {
						if d := utf16.DecodeRune(r, hex4(in[i+3:i+7])); d != unicode.ReplacementChar {
							out = utf8.AppendRune(out, d)
							i += 7
							continue
						}
					}
					r = unicode.ReplacementChar
				}
				out = utf8.AppendRune(out, r)
			default: // '"', '\\', '/'
				out = append(out, e)
			}
			i++
		case c < utf8.RuneSelf:
			out = append(out, c)
			i++
		default:
			r, size := utf8.DecodeRune(in[i:])
			out = utf8.AppendRune(out, r) // RuneError for each invalid byte, as encoding/json
			i += size
		}
	}
	return string(out)
}

// hex4 is the value of four hex digits (checked before).
func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		switch {
		case c <= '9':
			r = r<<4 | rune(c-'0')
		case c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			r = r<<4 | rune(c-'a'+10)
		}
	}
	return r
}
