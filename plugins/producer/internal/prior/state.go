package prior

import (
	"encoding/json"
	"fmt"
	"math"
)

// state is the prior's whole learned state, as persisted with the models it is the base of.
type state struct {
	TTFTA []float64        `json:"ttft_a"`
	TTFTB []float64        `json:"ttft_b"`
	TPOTA []float64        `json:"tpot_a"`
	TPOTB []float64        `json:"tpot_b"`
	NTTFT int              `json:"n_ttft"`
	NTPOT int              `json:"n_tpot"`
	Speed map[string]speed `json:"speed,omitempty"`
	// Kinds are the endpoints' kinds (SetKind); a state written before 3.6.0 has none.
	Kinds map[string]string `json:"kinds,omitempty"`
	// Each term's support and largest value (fit.s1, fit.s2, fit.top); a state written before
	// 3.3.1 has none, and its terms are taken as supported by every sample of their target.
	TTFTS1  []float64 `json:"ttft_s1,omitempty"`
	TTFTS2  []float64 `json:"ttft_s2,omitempty"`
	TTFTTop []float64 `json:"ttft_top,omitempty"`
	TPOTS1  []float64 `json:"tpot_s1,omitempty"`
	TPOTS2  []float64 `json:"tpot_s2,omitempty"`
	TPOTTop []float64 `json:"tpot_top,omitempty"`
}

// MarshalJSON encodes what the prior learned, so that a restarted producer continues from it.
func (p *Prior) MarshalJSON() ([]byte, error) {
	t, q := p.fits[TTFT], p.fits[TPOT]
	st := state{TTFTA: t.a, TTFTB: t.b, TPOTA: q.a, TPOTB: q.b,
		NTTFT: p.n[TTFT], NTPOT: p.n[TPOT], Speed: map[string]speed{}, Kinds: p.kinds,
		TTFTS1: t.s1, TTFTS2: t.s2, TTFTTop: t.top, TPOTS1: q.s1, TPOTS2: q.s2, TPOTTop: q.top}
	for id, sp := range p.speed {
		st.Speed[id] = *sp
	}
	return json.Marshal(st)
}

// Restore replaces what p learned with a state MarshalJSON wrote (by a prior with the same
// terms) and publishes it.
func (p *Prior) Restore(data []byte) error {
	var st state
	if err := json.Unmarshal(data, &st); err != nil {
		return fmt.Errorf("prior state: %w", err)
	}
	kt, kp := len(TTFTTerms), len(TPOTTerms)
	if len(st.TTFTA) != kt*kt || len(st.TTFTB) != kt || len(st.TPOTA) != kp*kp || len(st.TPOTB) != kp {
		return fmt.Errorf("prior state: sized for other terms (%d and %d TTFT values, want %d and %d)", len(st.TTFTA), len(st.TTFTB), kt*kt, kt)
	}
	for _, sup := range []struct {
		s1, s2, top []float64
		k           int
	}{{st.TTFTS1, st.TTFTS2, st.TTFTTop, kt}, {st.TPOTS1, st.TPOTS2, st.TPOTTop, kp}} {
		if len(sup.s1) != len(sup.s2) || len(sup.s1) != len(sup.top) || len(sup.s1) != 0 && len(sup.s1) != sup.k {
			return fmt.Errorf("prior state: sized for other terms (%d, %d and %d supports, want %d)", len(sup.s1), len(sup.s2), len(sup.top), sup.k)
		}
	}
	for _, v := range [][]float64{st.TTFTA, st.TTFTB, st.TPOTA, st.TPOTB, st.TTFTS1, st.TTFTS2, st.TTFTTop, st.TPOTS1, st.TPOTS2, st.TPOTTop} {
		for _, x := range v {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return fmt.Errorf("prior state: non-finite value")
			}
		}
	}
	t, q := p.fits[TTFT], p.fits[TPOT]
	copy(t.a, st.TTFTA)
	copy(t.b, st.TTFTB)
	copy(q.a, st.TPOTA)
	copy(q.b, st.TPOTB)
	p.n = [2]int{st.NTTFT, st.NTPOT}
	restoreSupport(t, st.TTFTS1, st.TTFTS2, st.TTFTTop, st.NTTFT)
	restoreSupport(q, st.TPOTS1, st.TPOTS2, st.TPOTTop, st.NTPOT)
	p.speed = map[string]*speed{}
	for id, sp := range st.Speed {
		p.speed[id] = &sp
	}
	p.kinds = map[string]string{}
	for id, kind := range st.Kinds {
		p.SetKind(id, kind)
	}
	p.Refresh()
	return nil
}

// restoreSupport sets f's term supports and largest values from a state's, or, for a state that
// has none (written before they were kept), as if every one of the target's n samples had
// excited every term.
func restoreSupport(f *fit, s1, s2, top []float64, n int) {
	if len(s1) == f.k {
		copy(f.s1, s1)
		copy(f.s2, s2)
		copy(f.top, top)
		return
	}
	for j := range f.k {
		f.s1[j], f.s2[j], f.top[j] = float64(n), float64(n), 0
	}
}
