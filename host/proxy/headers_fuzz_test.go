package proxy

import (
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/foresight-router/foresight/host/openai"
)

// fuzzObjectives are the objectives FuzzReadMeta's router knows.
var fuzzObjectives = map[string]int32{"interactive": 10, "batch": -1}

// FuzzReadMeta reads fuzzed values of every header the router reads (the SLO headers under both
// names, objective under either name, session, request id, debug) and checks readMeta against its
// doc comments. On success: each SLO is 0 when neither of its headers has a value, else the value
// of the first that has one, a finite number in (0, maxSLOMs]; the objective is the router's
// header's, else the gateway's, and the priority its own (0 when none is named or the name is
// unknown, which unknownObjective says); the session is the trimmed header or else the body's
// user; the request id is the trimmed header when given and well formed, else a fresh one (the
// malformed one, clipped, in badID), and either way 1 to 256 printable ASCII characters without
// spaces; debug is set by "1". On error: a 400 invalid_request_error whose Param is the first
// header, in the order readMeta reads them, with a bad value, and whose message names it.
func FuzzReadMeta(f *testing.F) {
	type seed struct{ ttft, tpot, ttftAlias, tpotAlias, objective, session, id, debug, user string }
	for _, s := range []seed{
		{},
		{ttft: "500", tpot: "50", objective: "interactive", session: "conv-1", id: "req-1", debug: "1", user: "u"},
		{ttftAlias: "250.5", tpotAlias: "20", objective: " batch ", id: " abc ", debug: "0"},
		{ttft: "100", ttftAlias: "bad", tpot: " 3600000 ", tpotAlias: "0"},
		{ttft: " ", ttftAlias: "1e3", tpot: "0x1p4"},
		{ttft: "NaN"}, {ttft: "Inf"}, {ttft: "-5"}, {ttft: "0"}, {tpot: "3600000.0001"}, {tpotAlias: "1e400"},
		{ttft: "5e-324"}, {ttft: "1_000"}, {ttft: "١٠"},
		{objective: "unknown"}, {objective: "Interactive"}, {objective: "batch"}, {objective: "gold"},
		{id: strings.Repeat("x", 256)}, {id: strings.Repeat("x", 257)}, {id: "has space"}, {id: "tab\tid"},
		{id: "caf\u00e9"}, {id: "\u00a0id\u00a0"}, {id: "\x7f"},
		{session: " \t", user: "body-user"}, {session: "\xff\xfe", user: ""},
		{debug: "true"}, {debug: " 1 "}, {debug: "01"},
	} {
		f.Add(s.ttft, s.tpot, s.ttftAlias, s.tpotAlias, s.objective, s.session, s.id, s.debug, s.user)
	}
	names := []string{HeaderSLOTTFT, HeaderSLOTPOT, HeaderSLOTTFTAlias, HeaderSLOTPOTAlias, HeaderObjective,
		HeaderSession, HeaderRequestID, HeaderDebug}
	f.Fuzz(func(t *testing.T, ttft, tpot, ttftAlias, tpotAlias, objective, session, id, debug, user string) {
		h := http.Header{}
		for i, v := range []string{ttft, tpot, ttftAlias, tpotAlias, objective, session, id, debug} {
			if v != "" {
				h.Set(names[i], v)
			}
		}
		if len(objective)%2 == 1 { // an objective of odd length comes under the gateway's name
			h.Del(HeaderObjective)
			h.Set(HeaderGatewayObjective, objective)
		}
		priority := func(name string) (int32, bool) { p, ok := fuzzObjectives[name]; return p, ok }
		m, err := readMeta(h, user, priority)

		// The reference reading, from the doc comments of readMeta and sloHeader.
		wantTTFT, badTTFT := referenceSLO(h, HeaderSLOTTFT, HeaderSLOTTFTAlias)
		wantTPOT, badTPOT := referenceSLO(h, HeaderSLOTPOT, HeaderSLOTPOTAlias)
		objName := strings.TrimSpace(h.Get(HeaderObjective))
		if objName == "" {
			objName = strings.TrimSpace(h.Get(HeaderGatewayObjective))
		}
		wantPriority, known := fuzzObjectives[objName]
		wantID := strings.TrimSpace(h.Get(HeaderRequestID))
		badID := len(wantID) > 256 || strings.ContainsFunc(wantID, func(r rune) bool { return r < 0x21 || r > 0x7e })
		wantDebug := strings.TrimSpace(debug)
		var wantParam string
		switch {
		case badTTFT != "":
			wantParam = badTTFT
		case badTPOT != "":
			wantParam = badTPOT
		case wantDebug != "" && wantDebug != "0" && wantDebug != "1":
			wantParam = HeaderDebug
		}

		if err != nil {
			if err.Status != http.StatusBadRequest || err.Type != openai.TypeInvalidRequest || err.Param != wantParam ||
				!slices.Contains(names, err.Param) || !strings.Contains(err.Message, err.Param) {
				t.Fatalf("headers %q: error %+v, want a 400 about %q", h, *err, wantParam)
			}
			return
		}
		if wantParam != "" {
			t.Fatalf("headers %q: accepted as %+v, want a 400 about %q", h, m, wantParam)
		}
		for _, v := range []float64{m.slo.TTFTMs, m.slo.TPOTMs} {
			if v != 0 && !(v > 0 && v <= maxSLOMs) || math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("headers %q: SLO %+v outside 0 or (0, %d]", h, m.slo, maxSLOMs)
			}
		}
		if m.slo.TTFTMs != wantTTFT || m.slo.TPOTMs != wantTPOT {
			t.Fatalf("headers %q: SLO %+v, want TTFT %v TPOT %v", h, m.slo, wantTTFT, wantTPOT)
		}
		if m.objective != objName || m.priority != wantPriority || m.unknownObjective != (objName != "" && !known) {
			t.Fatalf("headers %q: objective %q priority %d unknown %v", h, m.objective, m.priority, m.unknownObjective)
		}
		wantSession := strings.TrimSpace(session)
		if wantSession == "" {
			wantSession = user
		}
		if m.session != wantSession {
			t.Fatalf("headers %q, user %q: session %q, want %q", h, user, m.session, wantSession)
		}
		if m.id == "" || len(m.id) > 256 || strings.ContainsFunc(m.id, func(r rune) bool { return r < 0x21 || r > 0x7e }) ||
			wantID != "" && !badID && m.id != wantID || badID && (m.id == wantID || m.badID != openai.Clip(wantID)) {
			t.Fatalf("headers %q: request id %q (replacing %q)", h, m.id, m.badID)
		}
		if m.debug != (wantDebug == "1") {
			t.Fatalf("headers %q: debug %v", h, m.debug)
		}
	})
}

// referenceSLO reads an objective as sloHeader documents it: the first of names whose trimmed
// value is not empty, a finite number in (0, maxSLOMs]; bad is the header at fault, "" when none.
func referenceSLO(h http.Header, names ...string) (v float64, bad string) {
	for _, name := range names {
		raw := strings.TrimSpace(h.Get(name))
		if raw == "" {
			continue
		}
		v, err := strconv.ParseFloat(raw, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 || v > maxSLOMs {
			return 0, name
		}
		return v, ""
	}
	return 0, ""
}
