package prior

import (
	"encoding/json"
	"fmt"
	"math"
)

// state is the prior's whole learned state, as persisted with the models it is the base of.
type state struct {
	TTFTA []float64 `json:"ttft_a"`
	TTFTB []float64 `json:"ttft_b"`
	TPOTA []float64 `json:"tpot_a"`
	TPOTB []float64 `json:"tpot_b"`
	// Rows are the fleet fits' forgetting row counts; a state written before they were kept
	// (producer 3.1.0) has none, and they are recomputed from NTTFT and NTPOT.
	Rows  *[2]float64      `json:"rows,omitempty"`
	NTTFT int              `json:"n_ttft"`
	NTPOT int              `json:"n_tpot"`
	Speed map[string]speed `json:"speed,omitempty"`
	// Fits are the endpoints' own fits (none in a state of producer 3.1.0 or earlier).
	Fits map[string]fitsState `json:"fits,omitempty"`
}

// fitsState is one endpoint's own TTFT and TPOT fits.
type fitsState struct {
	TTFTA []float64  `json:"ttft_a"`
	TTFTB []float64  `json:"ttft_b"`
	TPOTA []float64  `json:"tpot_a"`
	TPOTB []float64  `json:"tpot_b"`
	Rows  [2]float64 `json:"rows"`
	At    [2]int     `json:"at"` // the prior's sample counts when they last faded
}

func fitsOf(f [2]*fit) fitsState {
	return fitsState{TTFTA: f[TTFT].a, TTFTB: f[TTFT].b, TPOTA: f[TPOT].a, TPOTB: f[TPOT].b,
		Rows: [2]float64{f[TTFT].rows, f[TPOT].rows}}
}

// into checks the sizes and values of st and copies them into f.
func (st *fitsState) into(f [2]*fit) error {
	kt, kp := len(TTFTTerms), len(TPOTTerms)
	if len(st.TTFTA) != kt*kt || len(st.TTFTB) != kt || len(st.TPOTA) != kp*kp || len(st.TPOTB) != kp {
		return fmt.Errorf("sized for other terms (%d and %d TTFT values, want %d and %d)", len(st.TTFTA), len(st.TTFTB), kt*kt, kt)
	}
	for _, v := range [][]float64{st.TTFTA, st.TTFTB, st.TPOTA, st.TPOTB, st.Rows[:]} {
		for _, x := range v {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return fmt.Errorf("non-finite value")
			}
		}
	}
	copy(f[TTFT].a, st.TTFTA)
	copy(f[TTFT].b, st.TTFTB)
	copy(f[TPOT].a, st.TPOTA)
	copy(f[TPOT].b, st.TPOTB)
	f[TTFT].rows, f[TPOT].rows = st.Rows[TTFT], st.Rows[TPOT]
	return nil
}

// MarshalJSON encodes what the prior learned, so that a restarted producer continues from it.
func (p *Prior) MarshalJSON() ([]byte, error) {
	fleet := fitsOf(p.fits)
	st := state{TTFTA: fleet.TTFTA, TTFTB: fleet.TTFTB, TPOTA: fleet.TPOTA, TPOTB: fleet.TPOTB, Rows: &fleet.Rows,
		NTTFT: p.n[TTFT], NTPOT: p.n[TPOT], Speed: map[string]speed{}, Fits: map[string]fitsState{}}
	for id, e := range p.ends {
		st.Speed[id] = e.speed
		f := fitsOf(e.fits)
		f.At = e.at
		st.Fits[id] = f
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
	fleet := fitsState{TTFTA: st.TTFTA, TTFTB: st.TTFTB, TPOTA: st.TPOTA, TPOTB: st.TPOTB}
	if st.Rows != nil {
		fleet.Rows = *st.Rows
	} else {
		for k, n := range [2]int{st.NTTFT, st.NTPOT} {
			d := p.fits[k].decay
			fleet.Rows[k] = (1 - math.Pow(d, float64(n))) / (1 - d)
		}
	}
	fits := newFits(p.params)
	if err := fleet.into(fits); err != nil {
		return fmt.Errorf("prior state: %w", err)
	}
	ends := map[string]*endpoint{}
	for id, sp := range st.Speed {
		ends[id] = &endpoint{speed: sp, fits: newFits(p.params)}
	}
	for id, f := range st.Fits {
		e := ends[id]
		if e == nil {
			e = &endpoint{fits: newFits(p.params)}
			ends[id] = e
		}
		if err := f.into(e.fits); err != nil {
			return fmt.Errorf("prior state, endpoint %q: %w", id, err)
		}
		e.at = f.At
	}
	p.fits, p.ends, p.n = fits, ends, [2]int{st.NTTFT, st.NTPOT}
	p.Refresh()
	return nil
}
