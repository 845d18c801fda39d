package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/foresight-router/foresight/host/admin"
	"github.com/foresight-router/foresight/sim/loadgen"
)

// adminClient calls the router's admin API.
type adminClient struct {
	base, token string
	c           *http.Client
}

// do sends a request and returns the status and the body of the answer.
func (a *adminClient) do(ctx context.Context, method, path string, body []byte) (int, []byte, error) {
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
		return 0, nil, fmt.Errorf("%s %s: %s", method, path, transportError(err))
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return resp.StatusCode, answer, fmt.Errorf("%s %s: reading the answer: %w", method, path, err)
	}
	return resp.StatusCode, answer, nil
}

// pipeline returns GET /admin/pipeline's description.
func (a *adminClient) pipeline(ctx context.Context) (admin.Description, error) {
	var d admin.Description
	status, body, err := a.do(ctx, http.MethodGet, "/admin/pipeline", nil)
	if err != nil {
		return d, err
	}
	if status != http.StatusOK {
		return d, fmt.Errorf("GET /admin/pipeline: status %d: %s", status, errorMessage(body))
	}
	if err := json.Unmarshal(body, &d); err != nil {
		return d, fmt.Errorf("GET /admin/pipeline: %w", err)
	}
	return d, nil
}

// writeAtomically replaces file with data through a rename, so that the router's file watcher
// never reads it half written.
func writeAtomically(file string, data []byte) error {
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

// errorMessage returns an OpenAI error body's message, else the body's start.
func errorMessage(body []byte) string { return clip(loadgen.ErrorText(body), 200) }

// transportError returns err without the method and URL an *url.Error repeats.
func transportError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return clip(err.Error(), 200)
}

// clip returns s with its runs of white space made single spaces, cut to n bytes with an ellipsis.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
