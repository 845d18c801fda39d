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
}

// MarshalJSON encodes what the prior learned, so that a restarted producer continues from it.
func (p *Prior) MarshalJSON() ([]byte, error) {
	t, q := p.fits[TTFT], p.fits[TPOT]
	st := state{TTFTA: t.a, TTFTB: t.b, TPOTA: q.a, TPOTB: q.b,
		NTTFT: p.n[TTFT], NTPOT: p.n[TPOT], Speed: map[string]speed{}}
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
	for _, v := range [][]float64{st.TTFTA, st.TTFTB, st.TPOTA, st.TPOTB} {
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
	p.speed = map[string]*speed{}
	for id, sp := range st.Speed {
		p.speed[id] = &sp
	}
	p.Refresh()
	return nil
}
