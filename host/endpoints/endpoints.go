// Package endpoints keeps the live router's view of its fleet of model servers: the endpoint
// list, each endpoint's engine gauges scraped from its Prometheus /metrics, whether it is in the
// rotation, and the models it serves. A Set scrapes every endpoint on a short period (50 ms by
// default) so routing decisions see queues at most a scrape old; an endpoint that fails
// repeatedly (scrapes, or connections the proxy reports) leaves the rotation and is probed back.
// The list itself comes from the configuration or from a YAML file that Watch follows.
package endpoints

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/foresight-router/foresight/host/kvevents"
)

// Endpoint is one model server.
type Endpoint struct {
	// ID is unique within a set, e.g. "vllm-0"; a file entry without one takes its Address.
	ID string
	// Address is "host:port" (plain http) or a base URL "http://host:port" / "https://…", to
	// which the router appends /metrics, /health, /v1/….
	Address string
	// Labels describe the endpoint to the pipeline, e.g. accelerator or role (may be nil).
	Labels map[string]string
	// KVEvents is the address of the engine's KV-cache event publisher (vLLM's
	// --kv-events-config endpoint, bound there): "tcp://host:port" or "ipc://path"; "" when it
	// publishes none. KVEventsReplay is its replay socket's ("" for none).
	KVEvents, KVEventsReplay string
}

// BaseURL returns the endpoint's base URL without a trailing slash ("http://" + Address when
// Address has no scheme).
func (e Endpoint) BaseURL() string {
	if strings.Contains(e.Address, "://") {
		return strings.TrimRight(e.Address, "/")
	}
	return "http://" + e.Address
}

// HostPort returns the host:port the endpoint listens on: Address itself, or a base URL's host
// with the scheme's default port when it names none (what a gateway connects to).
func (e Endpoint) HostPort() string {
	if !strings.Contains(e.Address, "://") {
		return e.Address
	}
	u, err := url.Parse(e.Address)
	if err != nil { // ValidateAddress refused it before it got here
		return e.Address
	}
	if u.Port() != "" {
		return u.Host
	}
	port := "80"
	if u.Scheme == "https" {
		port = "443"
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// ValidateAddress accepts "host:port" with a non-empty host and a port in 1..65535, or an http
// or https URL with such a host (a path prefix is allowed; a query or fragment is not).
func ValidateAddress(a string) error {
	if a == "" {
		return errors.New("address is required (host:port or http://host:port)")
	}
	hostport := a
	if strings.Contains(a, "://") {
		u, err := url.Parse(a)
		if err != nil {
			return fmt.Errorf("address %q is not a URL: %v", a, err)
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			return fmt.Errorf("address %q has scheme %q; accepted: http, https", a, u.Scheme)
		}
		if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			return fmt.Errorf("address %q must be a base URL without user, query or fragment", a)
		}
		if u.Port() == "" {
			// The scheme's default port.
			if u.Hostname() == "" {
				return fmt.Errorf("address %q has no host", a)
			}
			return nil
		}
		hostport = u.Host
	}
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return fmt.Errorf("address %q is neither host:port nor an http(s) URL", a)
	}
	if host == "" {
		return fmt.Errorf("address %q has no host", a)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("address %q has port %q; accepted: 1 to 65535", a, port)
	}
	return nil
}

// validate checks a whole list: non-empty, unique IDs and valid addresses. It returns a copy
// whose Labels maps belong to the set.
func validate(eps []Endpoint) ([]Endpoint, error) {
	out := make([]Endpoint, len(eps))
	seen := make(map[string]int, len(eps))
	for i, e := range eps {
		if e.ID == "" {
			return nil, fmt.Errorf("endpoint %d (address %q): id is required", i, e.Address)
		}
		if j, dup := seen[e.ID]; dup {
			return nil, fmt.Errorf("endpoint %d: id %q is also endpoint %d's id", i, e.ID, j)
		}
		seen[e.ID] = i
		if err := ValidateAddress(e.Address); err != nil {
			return nil, fmt.Errorf("endpoint %q: %w", e.ID, err)
		}
		e.Labels = maps.Clone(e.Labels)
		out[i] = e
	}
	return out, nil
}

// ValidateKVEvents checks a KV-cache event publisher's address: "tcp://host:port" or "ipc://path",
// the addresses the router's subscriber connects to (kvevents.ValidateAddress).
func ValidateKVEvents(a string) error { return kvevents.ValidateAddress(a) }
