package endpoints

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// textFormat asks for the classic Prometheus text format, which vLLM and SGLang serve (through
// prometheus_client) and expfmt's TextParser reads.
const textFormat = "text/plain;version=0.0.4;q=1,*/*;q=0.1"

// scraper reads one endpoint. It belongs to that endpoint's loop goroutine: its buffers and
// parser are reused from one scrape to the next, so a steady fleet scrapes without growing.
type scraper struct {
	client  *http.Client
	timeout time.Duration
	names   MetricNames

	metricsURL, healthURL, modelsURL string
	// metrics reads /metrics over the loop's own connection; nil when client does (an https
	// endpoint, or a Config.Client of the caller's).
	metrics *conn

	body   bytes.Buffer // the last response body
	kept   bytes.Buffer // the lines of body naming a metric of names
	parser expfmt.TextParser
}

func newScraper(cfg Config, ep Endpoint) *scraper {
	base := ep.BaseURL()
	sc := &scraper{
		client: cfg.Client, timeout: cfg.Timeout, names: cfg.Names,
		metricsURL: base + "/metrics", healthURL: base + "/health", modelsURL: base + "/v1/models",
		// vLLM's names contain ':', which the legacy scheme accepts too; UTF-8 accepts any.
		parser: expfmt.NewTextParser(model.UTF8Validation),
	}
	if cfg.ownClient {
		sc.metrics = newConn(sc.metricsURL, textFormat)
	}
	return sc
}

// close drops the scraper's own connection, if any (the client keeps its pool).
func (sc *scraper) close() {
	if sc.metrics != nil {
		sc.metrics.close()
	}
}

// scrape reads the engine gauges from /metrics.
func (sc *scraper) scrape(ctx context.Context) (gauges, error) {
	var err error
	if sc.metrics != nil {
		err = sc.metrics.get(ctx, sc.timeout, &sc.body)
		if errors.Is(err, errRedirect) {
			sc.metrics = nil // the client follows redirects, from now on
		}
	}
	if sc.metrics == nil {
		err = sc.get(ctx, sc.metricsURL, textFormat)
	}
	if err != nil {
		return gauges{}, err
	}
	g, err := parseMetrics(sc.body.Bytes(), sc.names, &sc.kept, &sc.parser)
	if err != nil {
		return gauges{}, fmt.Errorf("reading %s: %w", sc.metricsURL, err)
	}
	return g, nil
}

// health asks /health whether the server is up (any 2xx answer says it is).
func (sc *scraper) health(ctx context.Context) error {
	return sc.get(ctx, sc.healthURL, "*/*")
}

// models reads the ids of /v1/models ("data"[].id), sorted and without duplicates; never nil.
func (sc *scraper) models(ctx context.Context) ([]string, error) {
	if err := sc.get(ctx, sc.modelsURL, "application/json"); err != nil {
		return nil, err
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(sc.body.Bytes(), &list); err != nil {
		return nil, fmt.Errorf("reading %s: %w", sc.modelsURL, err)
	}
	ids := make([]string, 0, len(list.Data))
	for _, m := range list.Data {
		if m.ID != "" {
			ids = append(ids, m.ID)
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids), nil
}

// get fetches url into sc.body within the scrape timeout; anything but a 2xx answer with a body
// of at most MaxBodyBytes is an error.
func (sc *scraper) get(ctx context.Context, url, accept string) error {
	ctx, cancel := context.WithTimeout(ctx, sc.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", accept)
	resp, err := sc.client.Do(req)
	if err != nil {
		return err // "Get \"http://…/metrics\": dial tcp …: connection refused"
	}
	defer resp.Body.Close()
	sc.body.Reset()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		// Drain a little so the connection can be reused.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return fmt.Errorf("GET %s: status %s", url, resp.Status)
	}
	n, err := sc.body.ReadFrom(io.LimitReader(resp.Body, MaxBodyBytes+1))
	if err != nil {
		return fmt.Errorf("GET %s: reading the body: %w", url, err)
	}
	if n > MaxBodyBytes {
		sc.body = bytes.Buffer{} // let the oversized buffer go
		return fmt.Errorf("GET %s: body larger than %d bytes", url, MaxBodyBytes)
	}
	return nil
}
