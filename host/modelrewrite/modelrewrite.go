// Package modelrewrite chooses the model a request is sent as, from the rules of Gateway API
// Inference Extension InferenceModelRewrite resources: a rule matches models by name (or every
// model) and names the targets to rewrite to, each with a weight. It is pure logic over plain
// values; host/kube reads the resources from the cluster and builds the Set.
//
// Precedence over every rule of every resource: a rule that names the request's model wins over a
// generic rule (one that names no model); among equals the oldest resource wins (then the one
// whose name sorts first); within a resource, the first rule in list order.
package modelrewrite

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"
)

// Target is a model a rule rewrites to. Weight is its share of the rule's requests: Weight over
// the sum of the rule's weights, or an equal share when every weight is 0.
type Target struct {
	Model  string
	Weight int32
}

// Rule rewrites the models it matches to one of its Targets. Models lists the names it matches
// exactly; an empty Models matches every model (a generic rule).
type Rule struct {
	Models  []string
	Targets []Target
}

// Resource is one InferenceModelRewrite: its name as logs show it ("namespace/name" or "name"),
// its creation time (the older resource wins among equals) and its rules, in order.
type Resource struct {
	Name    string
	Created time.Time
	Rules   []Rule
}

// Set is the rules of some resources, ready to pick from. It is immutable once built, so one Set
// may be read by any number of goroutines; the zero Set and a nil *Set have no rules.
type Set struct {
	exact   map[string]choice // model → the first rule, in precedence order, that names it
	generic *choice           // the first generic rule, nil when none
	rules   int
}

// choice is a valid rule as Pick uses it.
type choice struct {
	rule    string // "resource#index"
	targets []Target
	total   int // the sum of the weights; 0: every target has an equal share
}

// New returns the Set of resources' valid rules and, for each rule left out, an error naming it
// and what is wrong: a rule with no targets, a target without a model or with a negative weight,
// a match of an empty model name. The other rules are used.
func New(resources []Resource) (*Set, []error) {
	sorted := slices.Clone(resources)
	slices.SortStableFunc(sorted, func(a, b Resource) int {
		return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.Name, b.Name))
	})
	s := &Set{exact: map[string]choice{}}
	var errs []error
	for _, r := range sorted {
		for i, rule := range r.Rules {
			name := r.Name + "#" + strconv.Itoa(i)
			c, err := compile(name, rule)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			s.rules++
			if len(rule.Models) == 0 {
				if s.generic == nil {
					s.generic = &c
				}
				continue
			}
			for _, m := range rule.Models {
				if _, taken := s.exact[m]; !taken {
					s.exact[m] = c
				}
			}
		}
	}
	return s, errs
}

// compile checks rule (called name in errors) and returns it as Pick uses it.
func compile(name string, rule Rule) (choice, error) {
	bad := func(format string, args ...any) (choice, error) {
		return choice{}, fmt.Errorf("model rewrite rule %s: %s; the rule is skipped", name, fmt.Sprintf(format, args...))
	}
	if len(rule.Targets) == 0 {
		return bad("no targets: name at least one model to rewrite to")
	}
	for i, m := range rule.Models {
		if m == "" {
			return bad("matches[%d] names no model: give the model's name, or leave matches empty to match every model", i)
		}
	}
	c := choice{rule: name, targets: slices.Clone(rule.Targets)}
	for i, t := range rule.Targets {
		switch {
		case t.Model == "":
			return bad("targets[%d] names no model to rewrite to", i)
		case t.Weight < 0:
			return bad("targets[%d] (%q) has weight %d; accepted: 0 or more", i, t.Model, t.Weight)
		}
		c.total += int(t.Weight)
	}
	return c, nil
}

// Len is the number of valid rules in s.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return s.rules
}

// Pick returns the model a request for model is rewritten to and the rule that chose it
// ("resource#index"), or ok false when no rule matches. The rule is the first, in precedence
// order, that names model, else the first generic rule; its target is drawn with rnd, which
// returns a number in [0, n) (nil: math/rand/v2's IntN). The target may be model itself.
func (s *Set) Pick(model string, rnd func(n int) int) (target, rule string, ok bool) {
	if s == nil {
		return "", "", false
	}
	c, ok := s.exact[model]
	if !ok {
		if s.generic == nil {
			return "", "", false
		}
		c = *s.generic
	}
	if rnd == nil {
		rnd = rand.IntN
	}
	return c.draw(rnd), c.rule, true
}

// draw returns the model of one of c's targets, each with its share of the draws.
func (c choice) draw(rnd func(n int) int) string {
	if len(c.targets) == 1 {
		return c.targets[0].Model
	}
	if c.total == 0 {
		return c.targets[rnd(len(c.targets))].Model
	}
	n := rnd(c.total)
	for _, t := range c.targets {
		if n < int(t.Weight) {
			return t.Model
		}
		n -= int(t.Weight)
	}
	return c.targets[len(c.targets)-1].Model // rnd returned a number out of [0, total)
}
