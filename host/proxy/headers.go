package proxy

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/foresight-router/foresight/host/openai"
	"github.com/foresight-router/foresight/plugins/sdk"
)

// The request headers the router reads.
const (
	HeaderSLOTTFT      = "x-llm-d-slo-ttft-ms"
	HeaderSLOTPOT      = "x-llm-d-slo-tpot-ms"
	HeaderSLOTTFTAlias = "x-slo-ttft-ms"
	HeaderSLOTPOTAlias = "x-slo-tpot-ms"
	HeaderObjective    = "x-llm-d-inference-objective"
	// HeaderGatewayObjective is the inference extension's name for the objective;
	// HeaderObjective wins when both are present.
	HeaderGatewayObjective = "x-gateway-inference-objective"
	// HeaderModelRewrite names the model a gateway asks the request's body to carry instead of
	// the client's (the inference extension's model rewrite).
	HeaderModelRewrite = "x-gateway-model-name-rewrite"
	HeaderSession      = "x-session-id"
	HeaderRequestID    = "x-request-id"
	HeaderDebug        = "x-foresight-debug"
	// HeaderDecision carries the decision trace (JSON) in the response when the request asked
	// for it with HeaderDebug: 1.
	HeaderDecision = "x-foresight-decision"
	// HeaderDroppedReason carries the reason label (ttl-expired, band-full, no-endpoints …) of a
	// request that flow control answered itself with a 429 or 503, and HeaderDroppedReasonAlias
	// the same under llm-d's name.
	HeaderDroppedReason      = "x-foresight-dropped-reason"
	HeaderDroppedReasonAlias = "x-llm-d-request-dropped-reason"
)

// maxSLOMs bounds an SLO header: an hour is far beyond any latency objective.
const maxSLOMs = 3_600_000

// maxIDBytes bounds an x-request-id the router keeps; a longer one is replaced.
const maxIDBytes = 256

// meta is what the router reads from a request's headers.
type meta struct {
	id       string
	slo      sdk.SLO
	priority int32
	session  string
	debug    bool
	// objective is the objective's name (HeaderObjective, else HeaderGatewayObjective; "" without
	// one), and unknownObjective says no objective of that name is configured: the request has
	// the default priority 0.
	objective        string
	unknownObjective bool
	// badID is the client's x-request-id, clipped, when it was malformed and id replaces it.
	badID string
	// modelRewrite is HeaderModelRewrite's value ("" without one).
	modelRewrite string
	// profile is the scheduling profile chosen for the request and profileRule the handler's rule
	// that chose it; "" when the pipeline has no profiles (Profiles).
	profile, profileRule string
	// pd is the request's place in disaggregated serving as its cycle is to carry it (disagg.go);
	// decodeMatch, in a prefill decision, is the prefix match its decode endpoint had in the
	// decode decision, before the decode hop's dispatch recorded the prompt there.
	pd          sdk.Disaggregation
	decodeMatch float64
}

// readMeta parses the headers; a bad value is a 400 naming the header and what it accepts. Two
// are taken whatever their value, as the inference extension's picker takes them: an objective no
// one configured (the default priority 0, unknownObjective set) and a malformed x-request-id
// (replaced by a new one, badID set).
func readMeta(h http.Header, user string, priority func(string) (int32, bool)) (meta, *openai.Error) {
	var m meta
	var err *openai.Error
	if m.slo.TTFTMs, err = sloHeader(h, HeaderSLOTTFT, HeaderSLOTTFTAlias); err != nil {
		return m, err
	}
	if m.slo.TPOTMs, err = sloHeader(h, HeaderSLOTPOT, HeaderSLOTPOTAlias); err != nil {
		return m, err
	}
	m.objective = cmp.Or(strings.TrimSpace(h.Get(HeaderObjective)), strings.TrimSpace(h.Get(HeaderGatewayObjective)))
	if m.objective != "" {
		var ok bool
		m.priority, ok = priority(m.objective)
		m.unknownObjective = !ok
	}
	m.session = strings.TrimSpace(h.Get(HeaderSession))
	m.session = cmp.Or(m.session, user)
	m.id = strings.TrimSpace(h.Get(HeaderRequestID))
	if len(m.id) > maxIDBytes || strings.ContainsFunc(m.id, func(r rune) bool { return r < 0x21 || r > 0x7e }) {
		m.badID, m.id = openai.Clip(m.id), ""
	}
	if m.id == "" {
		m.id = newID()
	}
	m.modelRewrite = strings.TrimSpace(h.Get(HeaderModelRewrite))
	switch v := strings.TrimSpace(h.Get(HeaderDebug)); v {
	case "", "0":
	case "1":
		m.debug = true
	default:
		return m, openai.BadRequest(HeaderDebug, "%s %q: must be 1 (or 0)", HeaderDebug, openai.Clip(v))
	}
	return m, nil
}

// sloHeader reads an objective in milliseconds from the first of names present: a finite number
// in (0, maxSLOMs]; absent is 0 (no objective).
func sloHeader(h http.Header, names ...string) (float64, *openai.Error) {
	for _, name := range names {
		raw := strings.TrimSpace(h.Get(name))
		if raw == "" {
			continue
		}
		v, err := strconv.ParseFloat(raw, 64)
		if err != nil || math.IsNaN(v) || v <= 0 || v > maxSLOMs {
			return 0, openai.BadRequest(name, "%s %q: must be a number of milliseconds in (0, %d]", name, openai.Clip(raw), maxSLOMs)
		}
		return v, nil
	}
	return 0, nil
}

// newID returns 16 random hex digits.
func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// meta reads the request's headers (readMeta) and logs what it took in place of a bad value: a
// replaced x-request-id, with the client's clipped, each time; an unknown objective at most once
// a minute per name (objectiveWarnings), so that a client naming a new one per request cannot
// flood the log.
func (s *Server) meta(h http.Header, user string) (meta, *openai.Error) {
	m, e := readMeta(h, user, s.o.Priority)
	if e != nil {
		return m, e
	}
	if m.badID != "" {
		s.o.Log.Warn().Str("request_id", m.id).Str("client_request_id", m.badID).
			Msg("x-request-id is not at most 256 printable ASCII characters without spaces; the request goes on under a new one")
	}
	if m.unknownObjective && s.objectiveWarnings.first(m.objective, s.o.Now()) {
		accepted := "none are configured"
		if len(s.o.Objectives) > 0 {
			accepted = strings.Join(s.o.Objectives, ", ")
		}
		s.o.Log.Warn().Str("request_id", m.id).Str("objective", openai.Clip(m.objective)).Str("configured", accepted).
			Msg("unknown inference objective: the request has the default priority 0 (objectives: in the config, or an InferenceObjective; logged once a minute per name)")
	}
	return m, nil
}
