// Package promtext reads Prometheus text expositions for the tools that watch a router and its
// servers from outside (the demo's live view, bench live): one scrape, parsed with expfmt, and
// the few ways they read a value out of it.
package promtext

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// accept asks for the classic Prometheus text format, as the router's endpoint scraper does.
const accept = "text/plain;version=0.0.4;q=1,*/*;q=0.1"

// Families are the metric families of one exposition, by name.
type Families map[string]*dto.MetricFamily

// Scrape GETs the exposition at url and parses it; a status other than 200 is an error.
func Scrape(ctx context.Context, client *http.Client, url string) (Families, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", accept)
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return Parse(resp.Body)
}

// Parse reads a text exposition with UTF-8 names, so that vLLM's "vllm:…" read as they are; a
// body it cannot read is an error.
func Parse(r io.Reader) (Families, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parsing metrics: %w", err)
	}
	return fams, nil
}

// Sum returns the sum of the gauge, counter or untyped metric name over its series; ok is false
// when the exposition has no sample of it.
func (f Families) Sum(name string) (x float64, ok bool) {
	for _, m := range f[name].GetMetric() {
		if y, isValue := value(m); isValue {
			x, ok = x+y, true
		}
	}
	return x, ok
}

// With returns the value of the first series of name whose label has the value want; ok is false when
// there is none.
func (f Families) With(name, label, want string) (float64, bool) {
	for _, m := range f[name].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == label && l.GetValue() == want {
				return value(m)
			}
		}
	}
	return 0, false
}

// ByLabel returns the values of name's series summed by the value of their label (series
// without it are left out).
func (f Families) ByLabel(name, label string) map[string]float64 {
	out := map[string]float64{}
	for _, m := range f[name].GetMetric() {
		x, ok := value(m)
		if !ok {
			continue
		}
		for _, l := range m.GetLabel() {
			if l.GetName() == label {
				out[l.GetValue()] += x
			}
		}
	}
	return out
}

// value reads a gauge, counter or untyped sample; ok is false for other types.
func value(m *dto.Metric) (float64, bool) {
	switch {
	case m.Gauge != nil:
		return m.Gauge.GetValue(), true
	case m.Counter != nil:
		return m.Counter.GetValue(), true
	case m.Untyped != nil:
		return m.Untyped.GetValue(), true
	}
	return 0, false
}

// HistogramQuantile estimates the q-quantile of a histogram by linear interpolation inside the
// bucket that holds it, as Prometheus' histogram_quantile does; 0 for an empty histogram, and the
// last finite bound when the quantile lies beyond it.
func HistogramQuantile(h *dto.Histogram, q float64) float64 {
	total := h.GetSampleCount()
	if total == 0 {
		return 0
	}
	rank := q * float64(total)
	var lower, below float64 // the previous bucket's bound and cumulative count
	for _, b := range h.GetBucket() {
		upper, count := b.GetUpperBound(), float64(b.GetCumulativeCount())
		if math.IsInf(upper, 1) {
			break
		}
		if count >= rank {
			if count == below {
				return upper
			}
			return lower + (upper-lower)*(rank-below)/(count-below)
		}
		lower, below = upper, count
	}
	return lower
}

// Histogram returns the histogram name's series merged into one (their counts added bucket by
// bucket; series must share their bounds, as one family's do); ok is false when the exposition
// has no histogram sample of it.
func (f Families) Histogram(name string) (h *dto.Histogram, ok bool) {
	h = f.HistogramsBy(name, "")[""]
	return h, h != nil
}

// HistogramsBy returns the histogram name's series merged by the value of their label, as
// Histogram merges them all; "" takes every series under the key "".
func (f Families) HistogramsBy(name, label string) map[string]*dto.Histogram {
	out := map[string]*dto.Histogram{}
	for _, m := range f[name].GetMetric() {
		mh := m.GetHistogram()
		if mh == nil {
			continue
		}
		key := ""
		for _, l := range m.GetLabel() {
			if label != "" && l.GetName() == label {
				key = l.GetValue()
			}
		}
		h := out[key]
		if h == nil {
			h = &dto.Histogram{SampleCount: proto(uint64(0)), SampleSum: proto(0.0)}
			out[key] = h
		}
		*h.SampleCount += mh.GetSampleCount()
		*h.SampleSum += mh.GetSampleSum()
		for i, b := range mh.GetBucket() {
			if i == len(h.Bucket) {
				h.Bucket = append(h.Bucket, &dto.Bucket{UpperBound: proto(b.GetUpperBound()), CumulativeCount: proto(uint64(0))})
			}
			*h.Bucket[i].CumulativeCount += b.GetCumulativeCount()
		}
	}
	return out
}

func proto[T any](v T) *T { return &v }
