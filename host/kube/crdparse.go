package kube

import (
	"fmt"
	"math"

	"github.com/foresight-router/foresight/host/modelrewrite"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// poolKind is the kind a poolRef names by default, and the only one the router follows.
const poolKind = "InferencePool"

// forPool reads spec.poolRef of an InferenceObjective or InferenceModelRewrite ({group, kind,
// name}; group defaults to PoolResource.Group, kind to InferencePool) and reports whether it
// names the pool called pool. Its errors name the field.
func forPool(u *unstructured.Unstructured, pool string) (bool, error) {
	ref, found, err := unstructured.NestedMap(u.Object, "spec", "poolRef")
	switch {
	case err != nil:
		return false, fmt.Errorf("spec.poolRef must be {group, kind, name}: %v", err)
	case !found:
		return false, fmt.Errorf("spec.poolRef is missing: name the InferencePool the object applies to")
	}
	field := func(key, def string) (string, error) {
		v, ok := ref[key]
		if !ok {
			return def, nil
		}
		s, ok := v.(string)
		if !ok {
			return "", fmt.Errorf("spec.poolRef.%s is %v (%T), not a string", key, v, v)
		}
		if s == "" {
			return def, nil
		}
		return s, nil
	}
	var group, kind, name string
	if group, err = field("group", PoolResource.Group); err != nil {
		return false, err
	}
	if kind, err = field("kind", poolKind); err != nil {
		return false, err
	}
	if name, err = field("name", ""); err != nil {
		return false, err
	}
	if name == "" {
		return false, fmt.Errorf("spec.poolRef.name is empty: name the InferencePool the object applies to")
	}
	return group == PoolResource.Group && kind == poolKind && name == pool, nil
}

// parseObjective reads an InferenceObjective of pool: whether it is one (spec.poolRef) and its
// spec.priority (unset: 0; a whole number within int32, negative allowed). Its errors name the
// field.
func parseObjective(u *unstructured.Unstructured, pool string) (priority int32, ours bool, err error) {
	if ours, err = forPool(u, pool); err != nil || !ours {
		return 0, false, err
	}
	v, found, err := unstructured.NestedFieldNoCopy(u.Object, "spec", "priority")
	if err != nil || !found || v == nil {
		return 0, true, err
	}
	n, ok := wholeNumber(v)
	if !ok || n < math.MinInt32 || n > math.MaxInt32 {
		return 0, false, fmt.Errorf("spec.priority is %v; accepted: a whole number from %d to %d (higher is more important)", v, math.MinInt32, math.MaxInt32)
	}
	return int32(n), true, nil
}

// parseModelRewrite reads an InferenceModelRewrite of pool: whether it is one (spec.poolRef) and
// its spec.rules ([{matches: [{model: {type: Exact, value}}], targets: [{modelRewrite, weight}]}])
// as host/modelrewrite takes them, named "namespace/name". Only the shape is checked here (a
// field of the wrong type, a match type other than Exact): such an object is unreadable as a
// whole. What a rule says is checked by modelrewrite.New, which skips the rule alone.
func parseModelRewrite(u *unstructured.Unstructured, pool string) (r modelrewrite.Resource, ours bool, err error) {
	if ours, err = forPool(u, pool); err != nil || !ours {
		return r, false, err
	}
	r = modelrewrite.Resource{Name: u.GetNamespace() + "/" + u.GetName(), Created: u.GetCreationTimestamp().Time}
	rules, _, err := unstructured.NestedSlice(u.Object, "spec", "rules")
	if err != nil {
		return r, false, fmt.Errorf("spec.rules must be a list: %v", err)
	}
	for i, entry := range rules {
		rule, err := parseRule(entry)
		if err != nil {
			return r, false, fmt.Errorf("spec.rules[%d]%w", i, err)
		}
		r.Rules = append(r.Rules, rule)
	}
	return r, true, nil
}

// parseRule reads one entry of spec.rules; its errors start with the path below the rule
// (".matches[0].model.type is …").
func parseRule(entry any) (modelrewrite.Rule, error) {
	var rule modelrewrite.Rule
	m, ok := entry.(map[string]any)
	if !ok {
		return rule, fmt.Errorf(" is %T, not {matches, targets}", entry)
	}
	matches, err := list(m, "matches")
	if err != nil {
		return rule, err
	}
	for j, match := range matches {
		model, ok := match["model"].(map[string]any)
		if !ok {
			return rule, fmt.Errorf(".matches[%d].model is %T, not {type, value}", j, match["model"])
		}
		if t, ok := model["type"]; ok && t != "Exact" && t != "" {
			return rule, fmt.Errorf(".matches[%d].model.type is %v; accepted: Exact", j, t)
		}
		value, ok := model["value"].(string)
		if !ok {
			return rule, fmt.Errorf(".matches[%d].model.value is %T, not a model's name", j, model["value"])
		}
		rule.Models = append(rule.Models, value)
	}
	targets, err := list(m, "targets")
	if err != nil {
		return rule, err
	}
	for j, target := range targets {
		var t modelrewrite.Target
		if v, ok := target["modelRewrite"]; ok {
			if t.Model, ok = v.(string); !ok {
				return rule, fmt.Errorf(".targets[%d].modelRewrite is %T, not a model's name", j, v)
			}
		}
		if v, ok := target["weight"]; ok && v != nil {
			n, ok := wholeNumber(v)
			if !ok || n < math.MinInt32 || n > math.MaxInt32 {
				return rule, fmt.Errorf(".targets[%d].weight is %v; accepted: a whole number, 0 or more", j, v)
			}
			t.Weight = int32(n)
		}
		rule.Targets = append(rule.Targets, t)
	}
	return rule, nil
}

// list reads m[key] as a list of objects (absent: none); its errors start with ".key".
func list(m map[string]any, key string) ([]map[string]any, error) {
	v, ok := m[key]
	if !ok || v == nil {
		return nil, nil
	}
	entries, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf(".%s is %T, not a list", key, v)
	}
	out := make([]map[string]any, len(entries))
	for i, e := range entries {
		if out[i], ok = e.(map[string]any); !ok {
			return nil, fmt.Errorf(".%s[%d] is %T, not an object", key, i, e)
		}
	}
	return out, nil
}

// wholeNumber reads a JSON number that is whole: int64 from the API server's JSON, float64 from a
// generic decoder.
func wholeNumber(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case int32:
		return int64(x), true
	case int:
		return int64(x), true
	case float64:
		if x != math.Trunc(x) || x < -(1<<63) || x >= 1<<63 {
			return 0, false
		}
		return int64(x), true
	}
	return 0, false
}
