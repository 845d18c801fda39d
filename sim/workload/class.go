package workload

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseClasses reads every spec with ParseClass (nil for none); an error names the flag the
// specs come from, --class.
func ParseClasses(specs []string) ([]Class, error) {
	var out []Class
	for _, s := range specs {
		c, err := ParseClass(s)
		if err != nil {
			return nil, fmt.Errorf("--class: %w", err)
		}
		out = append(out, c)
	}
	return out, nil
}

// ParseClass reads a class written as NAME:WEIGHT followed by any of :ttft=MS, :tpot=MS,
// :priority=N and :nostream, e.g. "chat:0.8:ttft=500:tpot=50" or "batch:0.2:priority=-1:nostream".
// A class streams unless it says nostream.
func ParseClass(s string) (Class, error) {
	parts := strings.Split(s, ":")
	if len(parts) < 2 || parts[0] == "" {
		return Class{}, fmt.Errorf("class %q: want NAME:WEIGHT[:ttft=MS][:tpot=MS][:priority=N][:nostream]", s)
	}
	c := Class{Name: parts[0], Streaming: true}
	w, err := strconv.ParseFloat(parts[1], 64)
	if err != nil || w < 0 {
		return Class{}, fmt.Errorf("class %q: weight %q is not a number >= 0", s, parts[1])
	}
	c.Weight = w
	for _, opt := range parts[2:] {
		key, val, _ := strings.Cut(opt, "=")
		switch key {
		case "ttft", "tpot":
			ms, err := strconv.ParseFloat(val, 64)
			if err != nil || ms <= 0 {
				return Class{}, fmt.Errorf("class %q: %s wants milliseconds > 0, got %q", s, key, val)
			}
			if key == "ttft" {
				c.SLO.TTFTMs = ms
			} else {
				c.SLO.TPOTMs = ms
			}
		case "priority":
			n, err := strconv.ParseInt(val, 10, 32)
			if err != nil {
				return Class{}, fmt.Errorf("class %q: priority wants an integer, got %q", s, val)
			}
			c.Priority = int32(n)
		case "nostream":
			if val != "" || strings.Contains(opt, "=") {
				return Class{}, fmt.Errorf("class %q: nostream takes no value", s)
			}
			c.Streaming = false
		default:
			return Class{}, fmt.Errorf("class %q: unknown option %q (known: ttft, tpot, priority, nostream)", s, key)
		}
	}
	return c, nil
}
