package openai

// The pieces of one server-sent event the relay reads and rewrites: its lines, its data, and a
// member of the JSON object it carries.

import (
	"bytes"
	"encoding/json"
)

// lines calls f with each line of ev, without its terminator, and the terminator.
func lines(ev []byte, f func(line, eol []byte)) {
	for len(ev) > 0 {
		i := bytes.IndexByte(ev, '\n')
		if i < 0 {
			f(ev, nil)
			return
		}
		line, eol := ev[:i], ev[i:i+1]
		if len(line) > 0 && line[len(line)-1] == '\r' {
			line, eol = line[:len(line)-1], ev[i-1:i+1]
		}
		f(line, eol)
		ev = ev[i+1:]
	}
}

// dataValue returns the value of a "data" field line, as SSE defines it: after "data:", less
// one leading space; a bare "data" line has an empty value.
func dataValue(line []byte) ([]byte, bool) {
	if string(line) == "data" {
		return nil, true
	}
	v, ok := bytes.CutPrefix(line, []byte("data:"))
	if !ok {
		return nil, false
	}
	return bytes.TrimPrefix(v, []byte(" ")), true
}

// eventData returns ev's data, its data lines joined by "\n"; ok is false when it has none.
func eventData(ev []byte) (data []byte, ok bool) {
	n := 0
	lines(ev, func(line, _ []byte) {
		v, isData := dataValue(line)
		if !isData {
			return
		}
		if n == 0 {
			data = v // usually the only one: no copy
		} else {
			if n == 1 {
				data = append([]byte(nil), data...)
			}
			data = append(append(data, '\n'), v...)
		}
		n++
	})
	return data, n > 0
}

// replaceData returns ev with its data lines replaced by data, where the first one was: one
// "data: " line per line of data, ended as that first line was.
func replaceData(ev, data []byte) []byte {
	out := make([]byte, 0, len(ev))
	first := true
	lines(ev, func(line, eol []byte) {
		if _, isData := dataValue(line); !isData {
			out = append(append(out, line...), eol...)
			return
		}
		if !first {
			return
		}
		first = false
		for rest := data; ; {
			seg, more, multi := bytes.Cut(rest, []byte("\n"))
			if len(eol) == 0 && multi {
				eol = []byte("\n") // the event's last line had no end; inner lines still need one
			}
			out = append(append(append(out, "data: "...), seg...), eol...)
			if !multi {
				break
			}
			rest = more
		}
	})
	return out
}

// removeMember returns the JSON object obj without its top-level members called name, keeping
// every other byte (order, spacing) as it was. obj is returned as is if it is not an object.
func removeMember(obj []byte, name string) []byte {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return obj
	}
	// A member is its separator (whitespace, and a comma unless it is the first), then its key
	// to the end of its value.
	type member struct{ sep, start, end int }
	var kept []member
	total := 0
	lead := -1 // the first member's start: obj[open:lead] is the object's leading whitespace
	open := int(dec.InputOffset())
	prevEnd := open
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return obj
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return obj
		}
		end := int(dec.InputOffset())
		start := prevEnd + bytes.IndexByte(obj[prevEnd:], '"') // the key's opening quote
		total++
		if lead < 0 {
			lead = start
		}
		if key, _ := kt.(string); key != name {
			kept = append(kept, member{prevEnd, start, end})
		}
		prevEnd = end
	}
	if len(kept) == total {
		return obj // nothing removed
	}
	out := make([]byte, 0, len(obj))
	out = append(out, obj[:lead]...)
	for i, m := range kept {
		if i > 0 {
			out = append(out, obj[m.sep:m.start]...)
		}
		out = append(out, obj[m.start:m.end]...)
	}
	return append(out, obj[prevEnd:]...)
}
