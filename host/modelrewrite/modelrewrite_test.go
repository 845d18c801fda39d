package modelrewrite

import (
	"strings"
	"testing"
	"time"
)

// t0 is the creation time of the oldest resource in these tests.
var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// to is a rule that rewrites models (none: every model) to one target.
func to(target string, models ...string) Rule {
	return Rule{Models: models, Targets: []Target{{Model: target}}}
}

// first is an rnd that always draws 0.
func first(int) int { return 0 }

// Precedence: a rule naming the model beats a generic one, whatever their resources' ages; among
// equals the oldest resource, then the name sorting first; within a resource the first rule.
func TestPickPrecedence(t *testing.T) {
	tests := []struct {
		name      string
		resources []Resource
		model     string
		target    string
		rule      string // "" when no rule matches
	}{
		{"no resources", nil, "llama", "", ""},
		{"exact match", []Resource{{Name: "a", Created: t0, Rules: []Rule{to("llama-v2", "llama")}}}, "llama", "llama-v2", "a#0"},
		{"no rule for the model", []Resource{{Name: "a", Created: t0, Rules: []Rule{to("llama-v2", "llama")}}}, "qwen", "", ""},
		{"any of a rule's matches", []Resource{{Name: "a", Created: t0, Rules: []Rule{to("small-v1", "small", "tiny")}}}, "tiny", "small-v1", "a#0"},
		{"generic rule for any model", []Resource{{Name: "a", Created: t0, Rules: []Rule{to("default")}}}, "qwen", "default", "a#0"},
		// The generic rule is older and first in its resource: the exact one still wins.
		{"exact beats an older generic", []Resource{
			{Name: "old", Created: t0, Rules: []Rule{to("default"), to("never", "qwen")}},
			{Name: "new", Created: t0.Add(time.Hour), Rules: []Rule{to("llama-v2", "llama")}},
		}, "llama", "llama-v2", "new#0"},
		{"exact beats an earlier generic in one resource", []Resource{
			{Name: "a", Created: t0, Rules: []Rule{to("default"), to("llama-v2", "llama")}},
		}, "llama", "llama-v2", "a#1"},
		{"the oldest resource's exact rule", []Resource{
			{Name: "new", Created: t0.Add(time.Minute), Rules: []Rule{to("from-new", "llama")}},
			{Name: "old", Created: t0, Rules: []Rule{to("from-old", "llama")}},
		}, "llama", "from-old", "old#0"},
		{"the oldest resource's generic rule", []Resource{
			{Name: "new", Created: t0.Add(time.Minute), Rules: []Rule{to("from-new")}},
			{Name: "old", Created: t0, Rules: []Rule{to("from-old")}},
		}, "qwen", "from-old", "old#0"},
		{"same age: the name sorting first", []Resource{
			{Name: "llm/b", Created: t0, Rules: []Rule{to("from-b", "llama")}},
			{Name: "llm/a", Created: t0, Rules: []Rule{to("from-a", "llama")}},
		}, "llama", "from-a", "llm/a#0"},
		{"within a resource the first matching rule", []Resource{
			{Name: "a", Created: t0, Rules: []Rule{to("x", "qwen"), to("first", "llama"), to("second", "llama")}},
		}, "llama", "first", "a#1"},
		// An invalid rule is skipped: the next one in precedence order answers.
		{"an invalid rule is skipped", []Resource{
			{Name: "a", Created: t0, Rules: []Rule{{Models: []string{"llama"}}, to("valid", "llama")}},
		}, "llama", "valid", "a#1"},
		{"a rewrite to the model itself", []Resource{{Name: "a", Created: t0, Rules: []Rule{to("llama", "llama")}}}, "llama", "llama", "a#0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := New(tt.resources)
			target, rule, ok := s.Pick(tt.model, first)
			if ok != (tt.rule != "") || target != tt.target || rule != tt.rule {
				t.Errorf("Pick(%q) = %q, %q, %v; want %q, %q, %v", tt.model, target, rule, ok, tt.target, tt.rule, tt.rule != "")
			}
		})
	}
}

// Weights: a draw n in [0, sum) walks the targets' cumulative weights; with every weight 0 the
// draw is an index in [0, len(targets)).
func TestPickWeights(t *testing.T) {
	canary := []Target{{Model: "v1", Weight: 90}, {Model: "v2", Weight: 10}}
	tests := []struct {
		name    string
		targets []Target
		draw    int
		wantN   int // the n rnd must be asked for
		want    string
	}{
		{"90/10, draw 0: v1's [0, 90)", canary, 0, 100, "v1"},
		{"90/10, draw 89: v1's last", canary, 89, 100, "v1"},
		{"90/10, draw 90: v2's [90, 100)", canary, 90, 100, "v2"},
		{"90/10, draw 99: v2's last", canary, 99, 100, "v2"},
		// A zero weight among others is never drawn: 0/5/0 has one range, [0, 5).
		{"a zero weight is never drawn", []Target{{Model: "z", Weight: 0}, {Model: "w", Weight: 5}, {Model: "z2"}}, 0, 5, "w"},
		{"a zero weight is never drawn, last draw", []Target{{Model: "z", Weight: 0}, {Model: "w", Weight: 5}, {Model: "z2"}}, 4, 5, "w"},
		// Every weight 0 (or unset): uniform over the three, the draw an index.
		{"unset weights: index 0", []Target{{Model: "a"}, {Model: "b"}, {Model: "c"}}, 0, 3, "a"},
		{"unset weights: index 2", []Target{{Model: "a"}, {Model: "b"}, {Model: "c"}}, 2, 3, "c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, errs := New([]Resource{{Name: "r", Created: t0, Rules: []Rule{{Targets: tt.targets}}}})
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			askedN := -1
			got, _, _ := s.Pick("llama", func(n int) int { askedN = n; return tt.draw })
			if got != tt.want || askedN != tt.wantN {
				t.Errorf("draw %d: %q (rnd asked for [0, %d)); want %q (rnd asked for [0, %d))", tt.draw, got, askedN, tt.want, tt.wantN)
			}
		})
	}
	// One target: no draw at all.
	s, _ := New([]Resource{{Name: "r", Rules: []Rule{to("only")}}})
	if got, _, _ := s.Pick("llama", func(int) int { t.Error("rnd called with one target"); return 0 }); got != "only" {
		t.Errorf("one target: %q", got)
	}
	// Without rnd, math/rand's draws keep to the weights: 1/0 always gives the first.
	s, _ = New([]Resource{{Name: "r", Rules: []Rule{{Targets: []Target{{Model: "a", Weight: 1}, {Model: "b"}}}}}})
	for range 100 {
		if got, _, _ := s.Pick("llama", nil); got != "a" {
			t.Fatalf("weights 1/0 drew %q", got)
		}
	}
}

// An invalid rule is left out with an error naming it and what is wrong; the valid ones are used
// and counted.
func TestNewValidation(t *testing.T) {
	s, errs := New([]Resource{{Name: "llm/r", Created: t0, Rules: []Rule{
		{Models: []string{"a"}}, // #0: no targets
		{Models: []string{"b"}, Targets: []Target{{Model: "b1", Weight: 1}, {Weight: 1}}}, // #1: a target without a model
		{Targets: []Target{{Model: "x", Weight: 3}, {Model: "y", Weight: -1}}},            // #2: a negative weight
		{Models: []string{"c", ""}, Targets: []Target{{Model: "c1"}}},                     // #3: an empty model name
		to("d1", "d"), // #4: valid
	}}})
	want := []string{
		"model rewrite rule llm/r#0: no targets: name at least one model to rewrite to; the rule is skipped",
		"model rewrite rule llm/r#1: targets[1] names no model to rewrite to; the rule is skipped",
		`model rewrite rule llm/r#2: targets[1] ("y") has weight -1; accepted: 0 or more; the rule is skipped`,
		"model rewrite rule llm/r#3: matches[1] names no model: give the model's name, or leave matches empty to match every model; the rule is skipped",
	}
	var got []string
	for _, err := range errs {
		got = append(got, err.Error())
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if s.Len() != 1 {
		t.Errorf("Len = %d, want 1 valid rule", s.Len())
	}
	for _, model := range []string{"a", "b", "c", "anything"} { // the skipped #2 was the only generic rule
		if target, rule, ok := s.Pick(model, first); ok {
			t.Errorf("Pick(%q) = %q by %s; the rules for it were invalid", model, target, rule)
		}
	}
	if target, rule, ok := s.Pick("d", first); !ok || target != "d1" || rule != "llm/r#4" {
		t.Errorf("Pick(d) = %q, %q, %v; want d1 by llm/r#4", target, rule, ok)
	}
	var none *Set
	if _, _, ok := none.Pick("a", first); ok || none.Len() != 0 {
		t.Error("a nil Set picked a rule")
	}
}
