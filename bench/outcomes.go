package bench

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/sim/stats"
)

// OutcomeRecord is one simulated request as bench routing --outcomes writes it: a line of JSON,
// the lines of a file in arrival order. Times are in milliseconds (to the microsecond), arrivals
// from the run's start.
type OutcomeRecord struct {
	ArrivalMs float64 `json:"arrival_ms"`
	// Server served the request; empty for a shed one (ShedReason says why).
	Server string `json:"server,omitempty"`
	// Prefill served the prefill hop of a request split on a disaggregated fleet (Server
	// decoded it); empty when served whole.
	Prefill    string `json:"prefill,omitempty"`
	Shed       bool   `json:"shed,omitempty"`
	ShedReason string `json:"shed_reason,omitempty"`
	// QueuedMs is how long the request waited in the router's flow-control queue (Held).
	Held     bool    `json:"held,omitempty"`
	QueuedMs float64 `json:"queued_ms,omitempty"`
	TTFTMs   float64 `json:"ttft_ms"`
	E2EMs    float64 `json:"e2e_ms"`
	// TPOTMs is 0 with fewer than two output tokens.
	TPOTMs       float64 `json:"tpot_ms"`
	OutputTokens int     `json:"output_tokens"`
	SLO          sdk.SLO `json:"slo"`
	MetSLO       bool    `json:"met_slo"`
	// Predicted is the producer's prediction at dispatch for the server chosen, as the stages got
	// it (a TPOT of 0: not known yet); absent without one.
	Predicted *sdk.Prediction `json:"predicted,omitempty"`
}

// recordOf is o as a line of --outcomes.
func recordOf(o *stats.Outcome) OutcomeRecord {
	r := OutcomeRecord{ArrivalMs: ms(o.Arrival), Server: o.Server, Prefill: o.Prefill, Shed: o.Shed, ShedReason: o.ShedReason,
		Held: o.Held, QueuedMs: ms(o.Queued), SLO: o.SLO, MetSLO: o.MetSLO()}
	if !o.Shed {
		r.TTFTMs, r.E2EMs, r.TPOTMs, r.OutputTokens = ms(o.TTFT), ms(o.E2E), o.TPOTMs, o.OutputTokens
	}
	if o.Predicted.Valid {
		r.Predicted = &o.Predicted
	}
	return r
}

// WriteOutcomes writes every strategy's requests into dir (made if missing), one file per strategy
// named prefix + the strategy (a config's path with its separators as "_") + ".jsonl", and
// returns the files' paths in the order the strategies were asked for.
func (r *RoutingResult) WriteOutcomes(dir, prefix string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var paths []string
	for _, name := range r.order {
		outs := r.Strategies[name].outcomes
		if outs == nil {
			continue // unavailable: nothing ran
		}
		path := filepath.Join(dir, prefix+strings.NewReplacer("/", "_", `\`, "_").Replace(name)+".jsonl")
		if err := writeOutcomes(path, outs); err != nil {
			return paths, fmt.Errorf("strategy %q: %w", name, err)
		}
		paths = append(paths, path)
	}
	return paths, nil
}

// WriteOutcomes writes each load's outcomes into dir as RoutingResult.WriteOutcomes does, the
// files of load L prefixed "load-L-" (L as --load gave it, e.g. load-0.75-least-load.jsonl).
func (l *LadderResult) WriteOutcomes(dir string) ([]string, error) {
	var paths []string
	for _, rung := range l.Loads {
		p, err := rung.Result.WriteOutcomes(dir, "load-"+strconv.FormatFloat(rung.Load, 'f', -1, 64)+"-")
		paths = append(paths, p...)
		if err != nil {
			return paths, err
		}
	}
	return paths, nil
}

// writeOutcomes writes outs to path as OutcomeRecords, one per line, in arrival order.
func writeOutcomes(path string, outs []stats.Outcome) error {
	order := slices.Clone(outs)
	slices.SortStableFunc(order, func(a, b stats.Outcome) int { return cmp.Compare(a.Arrival, b.Arrival) })
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for i := range order {
		if err := enc.Encode(recordOf(&order[i])); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
