package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// The model a request asks for, rewritten on the way to the engine (SetModel) and back in its
// answer (ModelRename).

// SetModel makes name the model the engine is asked for: from then on r.Model is name,
// r.ClientModel still the model the client sent, and UpstreamBody returns the body with its
// "model" member set to name and every other member unchanged (with the hidden usage option
// added as before when HiddenUsage). Setting the client's model again undoes it.
func (r *Request) SetModel(name string) { r.Model = name }

// modelBody returns the client's body with its "model" member holding r.Model: the client's
// bytes with that one value replaced when the body has exactly one "model" member and the
// one-pass reader reads it, otherwise (an escaped key, a repeated member, deep nesting) the body
// re-encoded from its members, which keeps their values but not their order or spacing.
func (r *Request) modelBody() ([]byte, error) {
	name, err := encode(r.Model)
	if err != nil {
		return nil, fmt.Errorf("encoding model %q: %w", Clip(r.Model), err)
	}
	if start, end, ok := memberSpan(r.body, "model"); ok {
		out := make([]byte, 0, len(r.body)-(end-start)+len(name))
		return append(append(append(out, r.body[:start]...), name...), r.body[end:]...), nil
	}
	fields := make(map[string]json.RawMessage, len(r.raw))
	for k, v := range r.raw {
		fields[k] = v
	}
	fields["model"] = name
	out, err := encode(fields)
	if err != nil {
		return nil, fmt.Errorf("re-encoding request body: %w", err)
	}
	return out, nil
}

// memberSpan returns where the value of the top-level member name of the JSON object body starts
// and ends; ok is false when the object does not have exactly one such member or the one-pass
// reader is unsure of it (a key with an escape may spell name).
func memberSpan(body []byte, name string) (start, end int, ok bool) {
	s := scanner{b: body}
	if !s.byte('{') {
		return 0, 0, false
	}
	n := 0
	ok = s.members(func(key []byte) bool {
		if string(key) != name {
			return s.value(0)
		}
		n++
		s.space()
		start = s.i
		if !s.value(0) {
			return false
		}
		end = s.i
		return true
	})
	return start, end, ok && n == 1
}

// ModelRename renames the model in an engine's answer back to the name the client sent: From is
// the name the engine answers with (what Request.SetModel asked for), To the client's
// (Request.ClientModel).
type ModelRename struct{ From, To string }

// Apply returns b with every JSON member "model":"From" (with or without one space after the
// colon, From JSON-escaped as encoding/json writes it) changed to "model":"To", at any depth (a
// chunk carries "model" at the top, a responses event inside "response"), and every other byte
// kept. A zero ModelRename, an empty From, or From == To returns b itself; so does a b without
// such a member.
//
// Only members are touched, never text: inside a JSON string every quote is escaped (\"), so
// the bytes "model":"From" with bare quotes cannot occur in a string's content, and in valid
// JSON a bare quote followed by model" and a colon opens a key. A content text saying
// the \"model\":\"From\" field stays as it is.
func (m ModelRename) Apply(b []byte) []byte {
	out, _ := newRenamer(m).apply(b)
	return out
}

// renamer is a ModelRename with its patterns encoded once.
type renamer struct {
	from, to []byte // the names as JSON strings; nil when nothing is renamed
}

// modelKey starts every member renamer replaces.
var modelKey = []byte(`"model":`)

func newRenamer(m ModelRename) renamer {
	if m.From == "" || m.From == m.To {
		return renamer{}
	}
	from, err1 := encode(m.From)
	to, err2 := encode(m.To)
	if err1 != nil || err2 != nil { // strings always encode
		return renamer{}
	}
	return renamer{from: from, to: to}
}

// apply is Apply; changed reports whether anything was replaced (out is then a new slice).
func (r renamer) apply(b []byte) (out []byte, changed bool) {
	if r.from == nil {
		return b, false
	}
	done := 0 // b[:done] is in out (or unchanged when out is nil)
	for i := 0; ; {
		k := bytes.Index(b[i:], modelKey)
		if k < 0 {
			break
		}
		v := i + k + len(modelKey)
		if v < len(b) && b[v] == ' ' {
			v++
		}
		if !bytes.HasPrefix(b[v:], r.from) {
			i = v
			continue
		}
		if out == nil {
			out = make([]byte, 0, len(b)+len(r.to)-len(r.from))
		}
		out = append(append(out, b[done:v]...), r.to...)
		done = v + len(r.from)
		i = done
	}
	if out == nil {
		return b, false
	}
	return append(out, b[done:]...), true
}

// event returns ev with its data renamed (apply), its other lines kept; ev itself when there is
// nothing to rename.
func (r renamer) event(ev []byte) []byte {
	if r.from == nil {
		return ev
	}
	data, ok := eventData(ev)
	if !ok {
		return ev
	}
	renamed, changed := r.apply(data)
	if !changed {
		return ev
	}
	return replaceData(ev, renamed)
}
