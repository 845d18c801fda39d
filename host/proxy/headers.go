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

// meta is what the router reads from a request's headers.
type meta struct {
	id       string
	slo      sdk.SLO
	priority int32
	session  string
	debug    bool
	// objective is the x-llm-d-inference-objective's name ("" without one).
	objective string
	// profile is the scheduling profile chosen for the request and profileRule the handler's rule
	// that chose it; "" when the pipeline has no profiles (Profiles).
	profile, profileRule string
}

// readMeta parses the headers; a bad value is a 400 naming the header and what it accepts.
func readMeta(h http.Header, user string, priority func(string) (int32, bool), objectives []string) (meta, *openai.Error) {
	var m meta
	var err *openai.Error
	if m.slo.TTFTMs, err = sloHeader(h, HeaderSLOTTFT, HeaderSLOTTFTAlias); err != nil {
		return m, err
	}
	if m.slo.TPOTMs, err = sloHeader(h, HeaderSLOTPOT, HeaderSLOTPOTAlias); err != nil {
		return m, err
	}
	if name := strings.TrimSpace(h.Get(HeaderObjective)); name != "" {
		p, ok := priority(name)
		if !ok {
			accepted := "none are configured (objectives: in the router's config)"
			if len(objectives) > 0 {
				accepted = "one of " + strings.Join(objectives, ", ")
			}
			return m, openai.BadRequest(HeaderObjective, "%s: unknown objective %q: %s", HeaderObjective, openai.Clip(name), accepted)
		}
		m.priority, m.objective = p, name
	}
	m.session = strings.TrimSpace(h.Get(HeaderSession))
	m.session = cmp.Or(m.session, user)
	m.id = strings.TrimSpace(h.Get(HeaderRequestID))
	if len(m.id) > 256 || strings.ContainsFunc(m.id, func(r rune) bool { return r < 0x21 || r > 0x7e }) {
		return m, openai.BadRequest(HeaderRequestID, "%s must be at most 256 printable ASCII characters without spaces", HeaderRequestID)
	}
	if m.id == "" {
		m.id = newID()
	}
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
