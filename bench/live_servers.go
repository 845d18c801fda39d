package bench

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/foresight-router/foresight/internal/quantile"
	"github.com/foresight-router/foresight/sim/loadgen"
)

// LiveServer is one emulated server's part of a run.
type LiveServer struct {
	Addr     string  `json:"addr"`
	Requests int     `json:"requests"`
	Share    float64 `json:"share"`
	// MaxWaiting and MeanWaiting are its vllm:num_requests_waiting, sampled every 100 ms.
	MaxWaiting  float64 `json:"max_waiting"`
	MeanWaiting float64 `json:"mean_waiting"`
	// Slots are the slots flow control's detector believed it had at the run's end
	// (foresight_endpoint_slots); 0: none learned, or flow control off.
	Slots int `json:"slots,omitempty"`
	// TTFTP50Ms and TPOTP50Ms are the medians of the client's TTFT and TPOT over the requests
	// the server answered OK, SLOAttainment the share of its requests with an objective, cut
	// ones aside, that met them all (loadgen.Result.MetSLO). A request's server is the client's
	// target, or through a router its access line's endpoint (the last one tried); nil where no
	// request is known to have been there.
	TTFTP50Ms     *float64 `json:"ttft_p50_ms,omitempty"`
	TPOTP50Ms     *float64 `json:"tpot_p50_ms,omitempty"`
	SLOAttainment *float64 `json:"slo_attainment,omitempty"`
	// TTFTPredicted and TPOTPredicted compare the producer's predictions there with what the
	// router measured from the server (the producer's own samples); nil without predictions.
	TTFTPredicted *PredictionError `json:"ttft_predicted,omitempty"`
	TPOTPredicted *PredictionError `json:"tpot_predicted,omitempty"`
}

// PredictionError is how a server's predictions compared with the latencies measured: over
// Requests requests, the median of predicted / actual (1: no bias; above 1: predicted slower than
// it was) and the mean absolute percentage error.
type PredictionError struct {
	Requests   int     `json:"requests"`
	RatioP50   float64 `json:"ratio_p50"`
	MAPE       float64 `json:"mape"`
	ratios     []float64
	absErrSums float64
}

func (p *PredictionError) add(predicted, actual float64) {
	if predicted <= 0 || actual <= 0 {
		return
	}
	p.ratios = append(p.ratios, predicted/actual)
	p.absErrSums += math.Abs(predicted-actual) / actual
}

// done returns p with its figures, nil without a request.
func (p *PredictionError) done() *PredictionError {
	if len(p.ratios) == 0 {
		return nil
	}
	slices.Sort(p.ratios)
	p.Requests, p.RatioP50, p.MAPE = len(p.ratios), quantile.Sorted(p.ratios, 0.5), p.absErrSums/float64(len(p.ratios))
	return p
}

// servers fills each server's share of the requests (the router's count when fig has one, else
// the client's by target), its sampled waiting queue, and its latencies, SLO attainment and
// prediction errors from the results (through a router, with its access log).
func (r *LiveRun) servers(addrs []string, results []loadgen.Result, fig routerFigures, access *accessLog, maxWaiting, meanWaiting []float64) {
	counts := make([]int, len(addrs))
	if fig.dispatched != nil {
		for i, a := range addrs {
			counts[i] = int(fig.dispatched[a])
		}
	} else {
		for i := range results {
			counts[results[i].Target]++
		}
	}
	r.Dispatches = 0
	for _, c := range counts {
		r.Dispatches += c
	}
	r.ServerStats = make([]LiveServer, len(addrs))
	for i, a := range addrs {
		s := LiveServer{Addr: a, Requests: counts[i], MaxWaiting: maxWaiting[i], MeanWaiting: meanWaiting[i], Slots: int(fig.slots[a])}
		if r.Dispatches > 0 {
			s.Share = float64(counts[i]) / float64(r.Dispatches)
		}
		r.ServerStats[i] = s
	}
	if access != nil || fig.dispatched == nil { // a router's results say where they went only in its access lines
		r.serverLatencies(addrs, results, access)
	}
}

// serverLatencies fills each server's TTFT and TPOT medians, SLO attainment and prediction
// errors (LiveServer).
func (r *LiveRun) serverLatencies(addrs []string, results []loadgen.Result, access *accessLog) {
	index := make(map[string]int, len(addrs))
	for i, a := range addrs {
		index[a] = i
	}
	type acc struct {
		ttft, tpot         []float64
		withSLO, met       int
		predTTFT, predTPOT PredictionError
	}
	per := make([]acc, len(addrs))
	for i := range results {
		res := &results[i]
		server := res.Target
		var line accessLine
		if access != nil {
			l, ok := access.lookup(res.RequestID)
			j, known := index[l.endpoint]
			if !ok || !known {
				continue
			}
			server, line = j, l
		}
		a := &per[server]
		if res.Kind == loadgen.OK {
			if res.TTFT > 0 {
				a.ttft = append(a.ttft, ms(res.TTFT))
			}
			if res.TPOT > 0 {
				a.tpot = append(a.tpot, ms(res.TPOT))
			}
		}
		if res.HasSLO() && res.Kind != loadgen.Cut {
			a.withSLO++
			if res.MetSLO() {
				a.met++
			}
		}
		a.predTTFT.add(line.predTTFTMs, line.ttftMs)
		a.predTPOT.add(line.predTPOTMs, line.tpotMs)
	}
	for i := range per {
		a, s := &per[i], &r.ServerStats[i]
		s.TTFTP50Ms, s.TPOTP50Ms = median(a.ttft), median(a.tpot)
		if a.withSLO > 0 {
			s.SLOAttainment = ptr(float64(a.met) / float64(a.withSLO))
		}
		s.TTFTPredicted, s.TPOTPredicted = a.predTTFT.done(), a.predTPOT.done()
	}
}

// median returns the median of v (sorted in place), nil when v is empty.
func median(v []float64) *float64 {
	if len(v) == 0 {
		return nil
	}
	slices.Sort(v)
	return ptr(quantile.Sorted(v, 0.5))
}

// writeServerTable prints, per run, each server's TTFT and TPOT medians, SLO attainment and the
// median of predicted / measured TPOT, servers separated by slashes in --servers order.
func writeServerTable(out io.Writer, runs []LiveRun) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run\tTTFT p50 by server\tTPOT p50\tSLO att.\tpredicted/measured TTFT p50\tTPOT p50\t")
	for _, run := range runs {
		if run.Unavailable != "" {
			continue
		}
		cols := make([][]string, 5)
		for _, s := range run.ServerStats {
			cols[0] = append(cols[0], decimal(s.TTFTP50Ms, 0))
			cols[1] = append(cols[1], decimal(s.TPOTP50Ms, 1))
			cols[2] = append(cols[2], decimal(s.SLOAttainment, 2))
			cols[3] = append(cols[3], ratioP50(s.TTFTPredicted))
			cols[4] = append(cols[4], ratioP50(s.TPOTPredicted))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t\n", run.Name, strings.Join(cols[0], "/"), strings.Join(cols[1], "/"),
			strings.Join(cols[2], "/"), strings.Join(cols[3], "/"), strings.Join(cols[4], "/"))
	}
	_ = tw.Flush()
	fmt.Fprintln(out, "(by server in --servers order: the client's latencies in ms; predicted over what the router measured)")
}

func ratioP50(p *PredictionError) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf("%.2f", p.RatioP50)
}
