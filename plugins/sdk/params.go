package sdk

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sync/atomic"
)

// Validator is implemented by parameter structs that range-check themselves.
type Validator interface {
	// Validate returns an error naming the first out-of-range parameter and the accepted range.
	Validate() error
}

// DecodeParams decodes params, a JSON object, over defaults and returns the merged parameters:
// fields absent from params keep their default. Unknown fields and trailing data are errors; empty
// params or "null" yield the defaults. When T (or *T) implements Validator, the result is validated.
func DecodeParams[T any](params []byte, defaults T) (T, error) {
	out := defaults
	trimmed := bytes.TrimSpace(params)
	if len(trimmed) != 0 && !bytes.Equal(trimmed, []byte("null")) {
		dec := json.NewDecoder(bytes.NewReader(trimmed))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&out); err != nil {
			return defaults, fmt.Errorf("decoding parameters: %w", describeJSONError(err))
		}
		if _, err := dec.Token(); !errors.Is(err, io.EOF) {
			return defaults, errors.New("decoding parameters: trailing data after the JSON object")
		}
	}
	var v any = &out
	if val, ok := v.(Validator); ok {
		if err := val.Validate(); err != nil {
			return defaults, err
		}
	}
	return out, nil
}

func describeJSONError(err error) error {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) && typeErr.Field != "" {
		return fmt.Errorf("parameter %q: got JSON %s, want %s", typeErr.Field, typeErr.Value, typeErr.Type)
	}
	return err
}

// CheckRange returns an error unless lo <= v <= hi (and v is a number), naming the parameter.
func CheckRange(name string, v, lo, hi float64) error {
	if math.IsNaN(v) || v < lo || v > hi {
		return fmt.Errorf("parameter %q must be in [%g, %g], got %g", name, lo, hi, v)
	}
	return nil
}

// CheckOneOf returns an error unless v is one of allowed, naming the parameter.
func CheckOneOf(name, v string, allowed ...string) error {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	return fmt.Errorf("parameter %q must be one of %q, got %q", name, allowed, v)
}

// Params holds a plugin's parameters of type T: Configure decodes JSON over the defaults (see
// DecodeParams), validates and swaps them in atomically, so stage calls may run concurrently with
// a reconfiguration; on error the previous parameters stay in force. Embed it in a plugin to give
// the plugin its Configure method.
type Params[T any] struct {
	cur      atomic.Pointer[T]
	defaults func() T
}

// Init sets the defaults and makes them the parameters in force; call it in the plugin constructor.
func (p *Params[T]) Init(defaults func() T) {
	p.defaults = defaults
	d := defaults()
	p.cur.Store(&d)
}

// Configure merges params over the defaults, validates and swaps them in.
func (p *Params[T]) Configure(params []byte) error {
	v, err := DecodeParams(params, p.defaults())
	if err != nil {
		return err
	}
	p.cur.Store(&v)
	return nil
}

// Get returns the parameters in force; callers must not modify them.
func (p *Params[T]) Get() *T { return p.cur.Load() }

// CheckRangeOpenLow returns an error unless lo < v <= hi, naming the parameter.
func CheckRangeOpenLow(name string, v, lo, hi float64) error {
	if math.IsNaN(v) || v <= lo || v > hi {
		return fmt.Errorf("parameter %q must be in (%g, %g], got %g", name, lo, hi, v)
	}
	return nil
}

// ConfigDirEnv names the environment variable in which the host tells a plugin process the
// directory of the config file that declared it.
const ConfigDirEnv = "FORESIGHT_CONFIG_DIR"

// ResolvePath returns a path parameter as the plugin should use it: absolute paths and "" as
// they are, relative ones against the config file's directory (ConfigDirEnv), as the host
// resolves plugin binaries; without that variable, against the working directory.
func ResolvePath(p string) string { return ResolvePathIn(os.Getenv(ConfigDirEnv), p) }

// ResolvePathIn returns p as is when it is "" or absolute, else joined to dir (as is when dir is
// ""): the rule for every path in a config, plugin binaries and path parameters alike.
func ResolvePathIn(dir, p string) string {
	if p == "" || dir == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}
