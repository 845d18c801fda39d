package predictor

import "github.com/foresight-router/foresight/plugins/sdk"

// recordKinds remembers each endpoint's kind, the value of its label named label, for the prior
// (see Observe): the prior learns kinds from the endpoints Produce sees, since samples carry no
// labels. Only a change is stored.
func (p *Producer) recordKinds(eps []sdk.Endpoint, label string) {
	for i := range eps {
		e := &eps[i]
		kind := e.Labels[label]
		if was, ok := p.kinds.Load(e.ID); !ok && kind != "" || ok && was.(string) != kind {
			p.kinds.Store(e.ID, kind)
		}
	}
}

// kindOf is e's kind for the prior: its speedLabel label's value, "" with kinds off or no label.
func (s *serving) kindOf(e *sdk.Endpoint) string {
	if s.speedLabel == "" {
		return ""
	}
	return e.Labels[s.speedLabel]
}
