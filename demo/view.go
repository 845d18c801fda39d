package demo

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/foresight-router/foresight/sim/loadgen"
	"github.com/foresight-router/foresight/sim/workload"
)

// runInfo is what the view says about the run.
type runInfo struct {
	scenario, preset, api, admin, config string
	servers                              int
	rate                                 float64
	duration                             time.Duration
	classes                              []workload.Class
	addedObjectives                      []string // declared by the demo, missing from the config
	nats                                 string   // the router's state plane's NATS ("": none)
	endpoints                            []string // the router's static endpoints, as a config gives them
}

// compactEvery is how often the view prints a line when it cannot redraw (the first comes at
// once).
const compactEvery = 5 * time.Second

// view prints the run: a screen redrawn every second on a terminal, otherwise one line every
// compactEvery; and the summary at the end.
type view struct {
	out        io.Writer
	tty        bool
	info       runInfo
	lastBucket int // the compactEvery period of the last line printed
}

func newView(out io.Writer, tty bool, info runInfo) *view {
	return &view{out: out, tty: tty, info: info, lastBucket: -1} // a first line at the first update
}

// start prints the header once (a terminal gets it on every screen instead).
func (v *view) start() {
	if v.tty {
		fmt.Fprint(v.out, "\x1b[H\x1b[2J")
		return
	}
	fmt.Fprint(v.out, header(v.info))
}

func (v *view) update(s loadgen.Snapshot, f fleetState) {
	if v.tty {
		screen := header(v.info) + "\n" + renderScreen(s, f, v.info.duration)
		// Home, each line cleared to its end, then the rest of the screen: no flicker.
		fmt.Fprint(v.out, "\x1b[H"+strings.ReplaceAll(screen, "\n", "\x1b[K\n")+"\x1b[J")
		return
	}
	if bucket := int(s.Elapsed / compactEvery); bucket > v.lastBucket {
		v.lastBucket = bucket
		fmt.Fprintln(v.out, renderLine(s, f))
	}
}

// summary prints the figures of the whole run; interrupted says Ctrl-C ended it.
func (v *view) summary(s loadgen.Snapshot, f fleetState, wall time.Duration, interrupted bool) {
	fmt.Fprint(v.out, "\n"+renderSummary(v.info, s, f, wall, interrupted))
}

// header describes the run.
func header(in runInfo) string {
	var b strings.Builder
	fmt.Fprintf(&b, "foresight demo: %s at %.1f req/s for %v on %d emulated servers (%s)\n",
		in.scenario, in.rate, in.duration, in.servers, in.preset)
	fmt.Fprintf(&b, "router %s: OpenAI API http://%s, admin http://%s\n", in.config, in.api, in.admin)
	fmt.Fprintf(&b, "dashboard http://%s/dashboard\n", in.admin)
	if in.nats != "" {
		// A replica names the endpoints as this router does: a peer's events name them by id.
		fmt.Fprintf(&b, "state plane: NATS at %s; a `foresight serve` joins as a replica with this in its config:\n", in.nats)
		fmt.Fprintf(&b, "  state: {nats: {url: %s}}\n  endpoints: {static: [%s]}\n", in.nats, strings.Join(in.endpoints, ", "))
	}
	cs := make([]string, len(in.classes))
	for i, c := range in.classes {
		cs[i] = classString(c)
	}
	fmt.Fprintf(&b, "classes: %s\n", strings.Join(cs, ", "))
	if len(in.addedObjectives) > 0 {
		fmt.Fprintf(&b, "objectives added to the config: %s\n", strings.Join(in.addedObjectives, ", "))
	}
	return b.String()
}

func classString(c workload.Class) string {
	s := fmt.Sprintf("%s %g", c.Name, c.Weight)
	if c.SLO.TTFTMs > 0 {
		s += fmt.Sprintf(" ttft≤%gms", c.SLO.TTFTMs)
	}
	if c.SLO.TPOTMs > 0 {
		s += fmt.Sprintf(" tpot≤%gms", c.SLO.TPOTMs)
	}
	if c.Priority != 0 {
		s += fmt.Sprintf(" priority %d", c.Priority)
	}
	if !c.Streaming {
		s += " nostream"
	}
	return s
}

// renderScreen is the terminal view of one moment.
func renderScreen(s loadgen.Snapshot, f fleetState, duration time.Duration) string {
	var b strings.Builder
	phase := ""
	if s.Elapsed > duration {
		phase = " (sending done: letting requests in flight finish)"
	}
	fmt.Fprintf(&b, "elapsed %s of %v%s\nsent %d   in flight %d   skipped %d\n\n",
		s.Elapsed.Truncate(time.Second), duration, phase, s.Dispatched, s.InFlight, s.Skipped)
	fmt.Fprintf(&b, "%-10s %8s %8s %6s %8s\n", "ENDPOINT", "RUNNING", "WAITING", "KV", "PICKED")
	for _, e := range f.endpoints {
		if !e.ok {
			fmt.Fprintf(&b, "%-10s %8s %8s %6s %8s\n", e.id, "?", "?", "?", share(e.picks, f.decisions))
			continue
		}
		fmt.Fprintf(&b, "%-10s %8.0f %8.0f %5.1f%% %8s\n", e.id, e.running, e.waiting, 100*e.kv, share(e.picks, f.decisions))
	}
	fmt.Fprintf(&b, "(PICKED: share of the router's last %d decisions)\n\n", f.decisions)
	fmt.Fprintf(&b, "%-18s %-24s %s\n", "", fmt.Sprintf("last %v", s.Window), "whole run")
	row := func(name string, recent, run string) { fmt.Fprintf(&b, "%-18s %-24s %s\n", name, recent, run) }
	row("TTFT p50/p95", p50p95(s.Recent.TTFT), p50p95(s.Run.TTFT))
	row("TPOT p50/p95", p50p95(s.Recent.TPOT), p50p95(s.Run.TPOT))
	row("SLO attainment *", attainment(&s.Recent), attainment(&s.Run))
	row("ok/shed/errors", outcomes(&s.Recent), outcomes(&s.Run))
	row("prefix cache hit", hitRate(&s.Recent), hitRate(&s.Run))
	if fs := renderFailures(s.Run.Failures, 3, "  "); fs != "" {
		fmt.Fprintf(&b, "errors, why:\n%s", fs)
	}
	if arms := renderArms(f.experiment); arms != "" {
		fmt.Fprintf(&b, "\n%s", arms)
	}
	fmt.Fprintf(&b, "\npredictor  %s\n\n%s", predictorLine(f.predictor), attainmentNotes(f))
	return b.String()
}

// What the two SLO attainments of the view count: the client's (this process's, over the
// requests it sent) and the router's per arm (its experiment report, over each arm's window).
const (
	clientAttainmentNote = "* SLO attainment as the client measures it: of the requests sent with an objective, those\n" +
		"  that met it (TTFT, and TPOT over 2+ tokens); shed and failed requests count as missed.\n"
	armAttainmentNote = "** per arm, as the router measures it (/admin/experiments): over each arm's last outcomes,\n" +
		"   from the router's side of the connection.\n"
)

// attainmentNotes says what the view's SLO attainments count: the client's, and with an
// experiment the router's per arm.
func attainmentNotes(f fleetState) string {
	if f.experiment == nil {
		return clientAttainmentNote
	}
	return clientAttainmentNote + armAttainmentNote
}

// lineWidth bounds the lines of the view, so that a 120-column terminal or log viewer shows them
// whole.
const lineWidth = 120

// maxLoadList is the most endpoints whose loads a compact line lists one by one; a larger fleet
// gets its range.
const maxLoadList = 8

// clip shortens a line to width runes, ending it with "…" when it cut.
func clip(line string, width int) string {
	r := []rune(line)
	if len(r) <= width {
		return line
	}
	return string(r[:width-1]) + "…"
}

// renderFailures is one line per reason requests failed, each after indent: the n most frequent,
// and how many other reasons there were.
func renderFailures(fs []loadgen.Failure, n int, indent string) string {
	var b strings.Builder
	for i, f := range fs {
		if i == n {
			rest := 0
			for _, g := range fs[n:] {
				rest += g.Count
			}
			fmt.Fprintf(&b, "%s… %d more, for %d other reasons\n", indent, rest, len(fs)-n)
			break
		}
		b.WriteString(clip(fmt.Sprintf("%s%d × %s: %s", indent, f.Count, f.Kind, f.Example), lineWidth) + "\n")
	}
	return b.String()
}

// renderSummary gives the run's figures once it has ended.
func renderSummary(in runInfo, s loadgen.Snapshot, f fleetState, wall time.Duration, interrupted bool) string {
	var b strings.Builder
	r := &s.Run
	how := fmt.Sprintf("%v sending, %s wall", in.duration, wall.Round(100*time.Millisecond))
	if interrupted {
		how = fmt.Sprintf("interrupted after %s", wall.Round(100*time.Millisecond))
	}
	fmt.Fprintf(&b, "summary: %s on %d servers, %s\n", in.scenario, in.servers, how)
	fmt.Fprintf(&b, "  requests      sent %d, completed %d, shed %d, errors %d, cut off at the end %d, skipped %d\n",
		s.Dispatched, r.Count(loadgen.OK), r.Count(loadgen.Shed), r.Errors(), r.Count(loadgen.Cut), s.Skipped)
	if fs := renderFailures(r.Failures, 3, "                "); fs != "" {
		fmt.Fprintf(&b, "  errors, why   (count × kind: the first one's message)\n%s", fs)
	}
	p3 := func(p loadgen.Percentiles) string {
		if p.N == 0 {
			return "-"
		}
		return fmt.Sprintf("p50 %s  p95 %s  p99 %s  (%d)", msString(p.P50), msString(p.P95), msString(p.P99), p.N)
	}
	fmt.Fprintf(&b, "  TTFT ms       %s\n", p3(r.TTFT))
	fmt.Fprintf(&b, "  TPOT ms       %s\n", p3(r.TPOT))
	fmt.Fprintf(&b, "  E2E ms        %s\n", p3(r.E2E))
	fmt.Fprintf(&b, "  SLO attained* %s", attainment(r))
	for _, name := range []string{loadgen.ObjectiveInteractive, loadgen.ObjectiveBatch} {
		if o, ok := s.ByObjective[name]; ok {
			fmt.Fprintf(&b, "; %s %s, shed %d", name, attainment(&o), o.Count(loadgen.Shed))
		}
	}
	fmt.Fprintln(&b)
	fmt.Fprintf(&b, "  prefix cache  %s of prompt tokens served from the engines' caches\n", hitRate(r))
	if secs := s.Elapsed.Seconds(); secs > 0 {
		fmt.Fprintf(&b, "  throughput    %.0f output tokens/s, %.1f completed requests/s\n",
			float64(r.CompletionTokens)/secs, float64(r.Count(loadgen.OK))/secs)
	}
	fmt.Fprintf(&b, "  predictor     %s\n", predictorLine(f.predictor))
	if arms := renderArms(f.experiment); arms != "" {
		fmt.Fprintf(&b, "\n%s%s", arms, verdict(f.experiment))
	}
	b.WriteString("\n" + attainmentNotes(f))
	return b.String()
}

// predictorLine describes the producer from the router's /metrics: its model and its rolling
// prediction error.
func predictorLine(p predictorState) string {
	switch {
	case !p.ok:
		return "? (the router's /metrics did not answer)"
	case !p.producer:
		return "none: the pipeline has no producer"
	case p.version == 0:
		return fmt.Sprintf("no model yet (%.0f samples accepted; the other stages use load heuristics meanwhile)", p.accepted)
	}
	s := fmt.Sprintf("model v%.0f trained on %.0f rows", p.version, p.rows)
	if math.IsNaN(p.mapeTTFT) && math.IsNaN(p.mapeTPOT) {
		return s + ", no prediction error measured yet"
	}
	return s + fmt.Sprintf(", MAPE TTFT %s  TPOT %s (rolling)", percent(p.mapeTTFT), percent(p.mapeTPOT))
}

func percent(x float64) string {
	if math.IsNaN(x) {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*x)
}

func share(n, of int) string {
	if of == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*float64(n)/float64(of))
}

// p50p95 is "p50 / p95 ms".
func p50p95(p loadgen.Percentiles) string {
	if p.N == 0 {
		return "-"
	}
	return msString(p.P50) + " / " + msString(p.P95) + " ms"
}

// msString prints milliseconds with three significant figures or so.
func msString(x float64) string {
	switch {
	case x < 10:
		return strconv.FormatFloat(x, 'f', 2, 64)
	case x < 100:
		return strconv.FormatFloat(x, 'f', 1, 64)
	default:
		return strconv.FormatFloat(x, 'f', 0, 64)
	}
}

func attainment(s *loadgen.Summary) string {
	a, ok := s.Attainment()
	if !ok {
		return "-"
	}
	return fmt.Sprintf("%.1f%% (%d/%d)", 100*a, s.MetSLO, s.WithSLO)
}

func outcomes(s *loadgen.Summary) string {
	return fmt.Sprintf("%d / %d / %d", s.Count(loadgen.OK), s.Count(loadgen.Shed), s.Errors())
}

func hitRate(s *loadgen.Summary) string {
	h, ok := s.PrefixHitRate()
	if !ok {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*h)
}
