package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/foresight-router/foresight/bench/openloop"
	"github.com/foresight-router/foresight/host/admin"
)

// adminTimeout bounds one call of the admin API.
const adminTimeout = 30 * time.Second

// maxAnswer bounds the answer of one call that is read.
const maxAnswer = 4 << 20

// Admin is a client of a router's admin API.
type Admin struct {
	base, token string
	c           *http.Client
}

// NewAdmin returns a client of the admin listener at base (http://host:port) that sends token,
// when it is not empty, as the bearer token the router requires (config's admin token).
func NewAdmin(base, token string) *Admin {
	return &Admin{base: base, token: token, c: &http.Client{Timeout: adminTimeout}}
}

// Close closes the client's idle connections.
func (a *Admin) Close() { a.c.CloseIdleConnections() }

// Do sends a request and returns the status and the body of the answer (its first 4 MiB).
func (a *Admin) Do(ctx context.Context, method, path string, body []byte) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if a.token != "" {
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
	resp, err := a.c.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s: %s", method, path, openloop.TransportError(err))
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return resp.StatusCode, answer, fmt.Errorf("%s %s: reading the answer: %w", method, path, err)
	}
	return resp.StatusCode, answer, nil
}

// Pipeline returns GET /admin/pipeline's description.
func (a *Admin) Pipeline(ctx context.Context) (admin.Description, error) {
	var d admin.Description
	status, body, err := a.Do(ctx, http.MethodGet, "/admin/pipeline", nil)
	if err != nil {
		return d, err
	}
	if status != http.StatusOK {
		return d, fmt.Errorf("GET /admin/pipeline: status %d: %s", status, openloop.ErrorMessage(body))
	}
	if err := json.Unmarshal(body, &d); err != nil {
		return d, fmt.Errorf("GET /admin/pipeline: %w", err)
	}
	return d, nil
}

// WriteAtomically replaces file with data through a rename (from the name beside it with .tmp
// added), so that a router watching file never reads it half written.
func WriteAtomically(file string, data []byte) error {
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, file); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
}
