package endpoints

import (
	"bytes"
	"fmt"
	"math"
	"strconv"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// gauges are the engine state one scrape read.
type gauges struct {
	waiting, running int64
	kvCacheUsage     float64
	// blockSize and numGPUBlocks come from the cache-config info metric; cacheKnown says it
	// was there with usable labels.
	blockSize, numGPUBlocks int
	cacheKnown              bool
}

// parseMetrics reads the gauges of names from a Prometheus text body. Only the sample and TYPE
// lines naming one of those metrics are parsed (a vLLM body is mostly histogram buckets the
// router does not need); kept and p are reused between calls. A metric with several label sets
// (several models or data-parallel engines behind one server) counts its waiting and running requests summed
// and its KV-cache usage as the highest; the cache-config blocks are summed over its series
// (each engine has its own cache) and its block size is the first series'.
func parseMetrics(body []byte, names MetricNames, kept *bytes.Buffer, p *expfmt.TextParser) (gauges, error) {
	kept.Reset()
	for len(body) > 0 {
		var line []byte
		line, body, _ = bytes.Cut(body, []byte{'\n'})
		if names.wants(line) {
			kept.Write(line)
			kept.WriteByte('\n')
		}
	}
	fams, err := p.TextToMetricFamilies(kept)
	if err != nil {
		return gauges{}, fmt.Errorf("parsing metrics: %w", err)
	}
	var g gauges
	waiting, err := required(fams, names.Waiting, sum)
	if err != nil {
		return g, err
	}
	running, err := required(fams, names.Running, sum)
	if err != nil {
		return g, err
	}
	name := names.KVCacheUsage
	if fb := names.KVCacheUsageFallback; fams[name] == nil && fb != "" {
		if fams[fb] == nil {
			return g, fmt.Errorf("metric %q missing (and so is its fallback %q)", name, fb)
		}
		name = fb
	}
	if g.kvCacheUsage, err = required(fams, name, math.Max); err != nil {
		return g, err
	}
	g.waiting, g.running = int64(math.Round(waiting)), int64(math.Round(running))
	if f := fams[names.CacheConfig]; names.CacheConfig != "" && f != nil {
		for _, m := range f.GetMetric() {
			bs, err1 := strconv.Atoi(label(m, "block_size"))
			nb, err2 := strconv.Atoi(label(m, "num_gpu_blocks"))
			if err1 != nil || err2 != nil || bs <= 0 || nb <= 0 {
				continue // e.g. num_gpu_blocks="None" before the engine profiled its memory
			}
			if !g.cacheKnown {
				g.blockSize = bs
			}
			g.numGPUBlocks += nb
			g.cacheKnown = true
		}
	}
	return g, nil
}

func sum(a, b float64) float64 { return a + b }

// required combines the finite values of every series of the metric called name, or says that
// it is missing.
func required(fams map[string]*dto.MetricFamily, name string, combine func(a, b float64) float64) (float64, error) {
	f := fams[name]
	if f == nil {
		return 0, fmt.Errorf("metric %q missing", name)
	}
	v, found := 0.0, false
	for _, m := range f.GetMetric() {
		x, ok := value(m)
		if !ok || math.IsNaN(x) || math.IsInf(x, 0) {
			continue
		}
		if !found {
			v, found = x, true
		} else {
			v = combine(v, x)
		}
	}
	if !found {
		return 0, fmt.Errorf("metric %q has no finite value", name)
	}
	return v, nil
}

// value reads a gauge, untyped or counter sample.
func value(m *dto.Metric) (float64, bool) {
	switch {
	case m.Gauge != nil:
		return m.Gauge.GetValue(), true
	case m.Untyped != nil:
		return m.Untyped.GetValue(), true
	case m.Counter != nil:
		return m.Counter.GetValue(), true
	}
	return 0, false
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// wants says whether a line of a text body is a sample or TYPE line of one of the names (HELP
// lines change nothing the router reads, and their text is most of what the parser would copy).
// A line starting with '{' (a quoted UTF-8 name) is always kept, to be safe. It runs on every
// line of the body, so it compares prefixes rather than cutting the line into tokens.
func (n MetricNames) wants(line []byte) bool {
	if len(line) == 0 {
		return false
	}
	switch line[0] {
	case '{':
		return true
	case '#':
		rest, ok := bytes.CutPrefix(bytes.TrimLeft(line[1:], " \t"), []byte("TYPE"))
		if !ok || len(rest) == 0 || (rest[0] != ' ' && rest[0] != '\t') {
			return false
		}
		line = bytes.TrimLeft(rest, " \t")
		if len(line) > 0 && line[0] == '"' {
			return true
		}
	}
	return names(line, n.Waiting) || names(line, n.Running) || names(line, n.KVCacheUsage) ||
		names(line, n.KVCacheUsageFallback) || names(line, n.CacheConfig)
}

// names says whether line starts with the metric name w ("" names nothing). The byte after the
// name is checked first: on most lines of a body it rejects the line without a comparison.
func names(line []byte, w string) bool {
	switch {
	case w == "" || len(line) < len(w):
		return false
	case len(line) > len(w):
		if c := line[len(w)]; c != '{' && c != ' ' && c != '\t' {
			return false
		}
	}
	return string(line[:len(w)]) == w
}
