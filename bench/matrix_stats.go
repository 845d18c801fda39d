package bench

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/foresight-router/foresight/sim/stats"
	"github.com/foresight-router/foresight/sim/workload"
)

// MatrixResult is what RunMatrix measured; its JSON is bench routing --matrix's. It holds no
// wall-clock figure, so the same options give the same JSON byte for byte.
type MatrixResult struct {
	Matrix   string   `json:"matrix"`
	Workload string   `json:"workload"`
	Servers  int      `json:"servers"`
	Preset   string   `json:"preset"`
	Requests int      `json:"requests_per_run"`
	Seeds    []uint64 `json:"seeds"`
	// Load is the arrival rate as a fraction of SaturationRPS; RateFleet the rate, requests/s.
	Load               float64 `json:"load"`
	SaturationRPS      float64 `json:"saturation_fleet_rps"`
	SaturationMeasured bool    `json:"saturation_measured"`
	RateFleet          float64 `json:"rate_fleet_rps"`
	// NewGroup is the new prefix group of the rows whose NewGroup is set.
	NewGroup workload.NewGroup `json:"new_group"`
	Classes  []MatrixClass     `json:"classes"`
	Rows     []MatrixRow       `json:"rows"`
	// wall and cpu are how long the runs took and the CPU this process used (the table shows
	// them; the JSON does not); cpuOK is false where /proc is missing.
	wall, cpu time.Duration
	cpuOK     bool
}

// MatrixClass is one request class of the workload.
type MatrixClass struct {
	Name      string  `json:"name"`
	Weight    float64 `json:"weight"`
	Priority  int32   `json:"priority"`
	TTFTSLOMs float64 `json:"ttft_slo_ms,omitempty"`
	TPOTSLOMs float64 `json:"tpot_slo_ms,omitempty"`
}

// MatrixRow is one config of the matrix over every seed.
type MatrixRow struct {
	Config string `json:"config"`
	File   string `json:"file"`
	What   string `json:"what"`
	// NewGroup marks the rows whose workload has a prefix group arriving mid-run.
	NewGroup bool `json:"new_group"`
	// Classes has one entry per request class, then "all".
	Classes []ClassFigures `json:"classes"`
	// PredictedShare is the share of admitted requests whose endpoint had a valid TTFT prediction
	// at dispatch: below 1, the admitter of a predictive config saw no prediction (before the
	// producer's first model, or while its drift guard withholds them) and failed open.
	PredictedShare float64 `json:"predicted_share"`
	// Groups has one entry per prefix group, in order of first arrival (g1, g2, …; "new" for the
	// group arriving mid-run; "one-off" pools the requests of no group), each over the requests from the new group's first on when there is
	// one (the span in which every group competes), else over the whole run.
	Groups []GroupFigures `json:"groups"`
}

// ClassFigures are one class's figures in one config. Counts are summed over the seeds; shares
// are of those sums; per-seed figures come with their mean and 95 % interval across seeds.
type ClassFigures struct {
	Class    string `json:"class"`
	Arrived  int    `json:"arrived"`
	Admitted int    `json:"admitted"`
	// Completed is the admitted requests that finished (in the simulator, all of them), WithinSLO
	// those that met their objectives.
	Completed int `json:"completed"`
	WithinSLO int `json:"within_slo"`
	// CompletionShare is Completed / Arrived.
	CompletionShare float64 `json:"completion_share"`
	// GoodputRPS is requests of the class completed within their SLO per second of the run (from
	// its first arrival to its last completion, the same span for every class of a run).
	GoodputRPS Interval `json:"goodput_rps"`
	// TTFTP99Ms is the p99 of the completed requests' TTFT.
	TTFTP99Ms Interval `json:"ttft_p99_ms"`
	// HitArriving is the share of arriving requests that were cache hits, HitAdmitted the same
	// among admitted ones (seed 004's H14-2). A hit: at arrival, the router's prefix index held at
	// least one block of the request's prompt on some endpoint; in this workload, its group's
	// system prompt.
	HitArriving float64 `json:"cache_hit_share_arriving"`
	HitAdmitted float64 `json:"cache_hit_share_admitted"`
}

// GroupFigures is one prefix group's admission in one config.
type GroupFigures struct {
	Group    string `json:"group"`
	Arrived  int    `json:"arrived"`
	Admitted int    `json:"admitted"`
	// AdmittedShare is Admitted / Arrived.
	AdmittedShare float64 `json:"admitted_share"`
}

// Interval is a mean across seeds with its 95 % confidence interval, Student's t with seeds − 1
// degrees of freedom: mean ± t(0.975, n−1)·s/√n. PerSeed holds the values it is built from.
type Interval struct {
	Mean    float64   `json:"mean"`
	Low     float64   `json:"low"`
	High    float64   `json:"high"`
	PerSeed []float64 `json:"per_seed"`
}

// t975 is Student's t quantile 0.975 for 1, 2, … degrees of freedom (standard tables): the
// half-width of a two-sided 95 % interval in standard errors.
var t975 = []float64{12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
	2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093}

// intervalOf returns the mean of v and its 95 % t interval; v needs at most len(t975)+1 values
// (MatrixOptions checks the seed count), and one value gives an interval of zero width.
func intervalOf(v []float64) Interval {
	iv := Interval{PerSeed: v}
	n := float64(len(v))
	if n == 0 {
		return iv
	}
	for _, x := range v {
		iv.Mean += x / n
	}
	iv.Low, iv.High = iv.Mean, iv.Mean
	if len(v) < 2 {
		return iv
	}
	ss := 0.0
	for _, x := range v {
		ss += (x - iv.Mean) * (x - iv.Mean)
	}
	half := t975[len(v)-2] * math.Sqrt(ss/(n-1)) / math.Sqrt(n)
	iv.Low, iv.High = iv.Mean-half, iv.Mean+half
	return iv
}

// matrixRun is one config run on one seed: the requests, what became of them, the best prefix
// match each was offered at arrival, and the index of the new group's first request (len when
// there is none).
type matrixRun struct {
	requests     []workload.Request
	outcomes     []stats.Outcome
	bestMatch    []float64
	newGroupFrom int
	// newGroup is the workload group id of the group arriving mid-run; 0 without one.
	newGroup int
}

// classOf returns the index of r's class among classes (matched by priority and objectives, which
// the workload copied from it), or len(classes) when none matches.
func classOf(r *workload.Request, classes []workload.Class) int {
	for i, c := range classes {
		if c.Priority == r.Priority && c.SLO.TTFTMs == r.SLO.TTFTMs && c.SLO.TPOTMs == r.SLO.TPOTMs {
			return i
		}
	}
	return len(classes)
}

// classTally counts one class (or all) over the seeds.
type classTally struct {
	arrived, admitted, completed, within, hitArr, hitAdm int
	goodput, p99                                         []float64
}

// aggregate turns the runs of one config into its row.
func aggregate(mc matrixConfig, classes []workload.Class, runs []matrixRun) MatrixRow {
	row := MatrixRow{Config: mc.name, File: mc.file, What: mc.what, NewGroup: mc.newGroup}
	tallies := make([]classTally, len(classes)+1) // the last is "all"
	type groupTally struct{ arrived, admitted int }
	var groupOrder []string
	groups := map[string]*groupTally{}
	admitted, predicted := 0, 0
	for _, run := range runs {
		span := stats.Span(run.outcomes)
		perClass := make([][]stats.Outcome, len(classes)+1)
		for i := range run.requests {
			r, o := &run.requests[i], &run.outcomes[i]
			ci := classOf(r, classes)
			hit := run.bestMatch[i] > 0
			if !o.Shed {
				admitted++
				predicted += b2i(o.Predicted.Valid)
			}
			for _, k := range []int{ci, len(classes)} {
				if k == len(classes) && ci == len(classes) {
					continue // a request of no class counts once, in "all"
				}
				t := &tallies[k]
				t.arrived++
				t.hitArr += b2i(hit)
				if !o.Shed {
					t.admitted++
					t.completed++
					t.hitAdm += b2i(hit)
					t.within += b2i(o.MetSLO())
				}
				perClass[k] = append(perClass[k], *o)
			}
			label := groupLabel(r.Group, run.newGroup)
			if i < run.newGroupFrom && run.newGroupFrom < len(run.requests) {
				continue // with a new group, the groups are compared from its arrival on
			}
			g := groups[label]
			if g == nil {
				g = &groupTally{}
				groups[label] = g
				groupOrder = append(groupOrder, label)
			}
			g.arrived++
			g.admitted += b2i(!o.Shed)
		}
		for k := range perClass {
			s := stats.Summarize(perClass[k])
			within := 0
			for i := range perClass[k] {
				within += b2i(perClass[k][i].MetSLO())
			}
			gp := 0.0
			if span > 0 {
				gp = float64(within) / span
			}
			tallies[k].goodput = append(tallies[k].goodput, gp)
			tallies[k].p99 = append(tallies[k].p99, s.TTFTMs.P99)
		}
	}
	for k, t := range tallies {
		name := "all"
		if k < len(classes) {
			name = classes[k].Name
		}
		row.Classes = append(row.Classes, ClassFigures{Class: name, Arrived: t.arrived, Admitted: t.admitted,
			Completed: t.completed, WithinSLO: t.within, CompletionShare: share(t.completed, t.arrived),
			GoodputRPS: intervalOf(t.goodput), TTFTP99Ms: intervalOf(t.p99),
			HitArriving: share(t.hitArr, t.arrived), HitAdmitted: share(t.hitAdm, t.admitted)})
	}
	row.PredictedShare = share(predicted, admitted)
	sortGroups(groupOrder)
	for _, label := range groupOrder {
		g := groups[label]
		row.Groups = append(row.Groups, GroupFigures{Group: label, Arrived: g.arrived, Admitted: g.admitted,
			AdmittedShare: share(g.admitted, g.arrived)})
	}
	return row
}

// groupLabel names workload group g: "g1", "g2", …, "new" for the group arriving mid-run
// (newGroup, 0 without one) and "one-off" for the requests of no group.
func groupLabel(g, newGroup int) string {
	switch {
	case g == 0:
		return "one-off"
	case g == newGroup:
		return "new"
	}
	return "g" + strconv.Itoa(g)
}

// sortGroups puts g1, g2, … in numeric order, then "new", then "one-off" (the seeds may meet the
// groups in different orders).
func sortGroups(labels []string) {
	rank := func(l string) int {
		switch l {
		case "new":
			return math.MaxInt - 1
		case "one-off":
			return math.MaxInt
		}
		n, _ := strconv.Atoi(strings.TrimPrefix(l, "g"))
		return n
	}
	slices.SortStableFunc(labels, func(a, b string) int { return cmp.Compare(rank(a), rank(b)) })
}

func share(k, n int) float64 {
	if n == 0 {
		return 0
	}
	return float64(k) / float64(n)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
