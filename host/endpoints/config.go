package endpoints

import (
	"cmp"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/rs/zerolog"
)

// Defaults of a Config's zero fields.
const (
	// DefaultInterval keeps engine gauges at most a few tens of milliseconds old, the time scale
	// on which queues change under load (as llm-d's endpoint picker refreshes them).
	DefaultInterval = 50 * time.Millisecond
	// DefaultTimeout bounds one scrape; a server that cannot answer /metrics in a second is not
	// one to route to.
	DefaultTimeout = time.Second
	// DefaultFailAfter tolerates a lost packet or a slow scrape without dropping an endpoint.
	DefaultFailAfter = 3
	// DefaultProbeInterval brings a recovered endpoint back within a second without hammering
	// one that is down.
	DefaultProbeInterval = time.Second
	// DefaultModelsInterval: the models a server serves change only on a restart or a LoRA load.
	DefaultModelsInterval = 10 * time.Second
	// MaxBodyBytes bounds a /metrics or /v1/models body; a larger one is a failed scrape.
	MaxBodyBytes = 4 << 20
)

// Config configures a Set. Zero values take the defaults.
type Config struct {
	// Interval is the scrape period of an endpoint in the rotation (default 50ms).
	Interval time.Duration
	// Timeout is one scrape's (and probe's) deadline (default 1s).
	Timeout time.Duration
	// Names are the metric names to read (default Names("vllm")).
	Names MetricNames
	// FailAfter is the number of consecutive failures (scrapes, probes or proxy-reported) after
	// which an endpoint leaves the rotation (default 3).
	FailAfter int
	// ProbeInterval is how often an endpoint out of the rotation is probed: GET /health, then a
	// scrape (default 1s).
	ProbeInterval time.Duration
	// ModelsInterval is how often each endpoint's /v1/models is refreshed (default 10s).
	ModelsInterval time.Duration
	// Outlier configures ejecting an endpoint whose requests keep failing (ReportRequest).
	Outlier Outlier
	// Log receives ejections and returns (the zero Logger logs nothing).
	Log zerolog.Logger
	// Client makes every request (default: a client with bounded dials and idle connections).
	// When it is left nil, each loop reads a plain-http endpoint's /metrics over a keep-alive
	// connection of its own instead, with the same dial bounds and no goroutine hand-offs.
	Client *http.Client
	// ownClient says Client was nil, so the loops may use their own connections.
	ownClient bool
	// Now is the clock of ScrapedAt and MetricsAge (default time.Now; tests inject).
	Now func() time.Time
}

// withDefaults returns c with its zero fields set, or an error naming a negative one.
func (c Config) withDefaults() (Config, error) {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"interval", c.Interval}, {"timeout", c.Timeout},
		{"probe interval", c.ProbeInterval}, {"models interval", c.ModelsInterval},
	} {
		if d.v < 0 {
			return c, fmt.Errorf("%s must not be negative, got %v", d.name, d.v)
		}
	}
	if c.FailAfter < 0 {
		return c, fmt.Errorf("fail-after must not be negative, got %d", c.FailAfter)
	}
	var err error
	if c.Outlier, err = c.Outlier.WithDefaults(); err != nil {
		return c, err
	}
	c.Interval = cmp.Or(c.Interval, DefaultInterval)
	c.Timeout = cmp.Or(c.Timeout, DefaultTimeout)
	c.FailAfter = cmp.Or(c.FailAfter, DefaultFailAfter)
	c.ProbeInterval = cmp.Or(c.ProbeInterval, DefaultProbeInterval)
	c.ModelsInterval = cmp.Or(c.ModelsInterval, DefaultModelsInterval)
	if c.Names == (MetricNames{}) {
		c.Names, _ = Names("vllm")
	} else if err := c.Names.Validate(); err != nil {
		return c, err
	}
	if c.Client == nil {
		c.Client, c.ownClient = DefaultClient(), true
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c, nil
}

// DefaultClient returns the client a Set uses when Config.Client is nil: direct connections (no
// proxy from the environment: the router talks to its own fleet), dials bounded to 2s, a few idle
// keep-alive connections per endpoint (one scrape loop needs one), no overall timeout (each
// request carries its own deadline), and no compression: prometheus_client gzips a body for a
// client that accepts it, which on a loopback or LAN scrape every 50 ms costs the engine and the
// router CPU and saves nothing.
func DefaultClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext:           (&net.Dialer{Timeout: 2 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   5 * time.Second,
		ResponseHeaderTimeout: 10 * time.Second,
		DisableCompression:    true,
	}}
}
