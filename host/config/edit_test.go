package config

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/foresight-router/foresight/plugins/sdk"
)

const twoScorers = `
plugins:
  - name: queue
    type: queue-scorer
  - name: kv
    type: kv-cache-utilization-scorer
  - name: pick
    type: max-score-picker
pipeline:
  scorers:
    - pluginRef: queue
      weight: 3
    - pluginRef: kv
  picker: {pluginRef: pick}
`

func TestWithStage(t *testing.T) {
	c, err := Parse("edit.yaml", []byte(twoScorers))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.SlotNames(); !slices.Equal(got, []string{"scorers.0", "scorers.1", "picker"}) {
		t.Errorf("slots %v", got)
	}
	// A new name: a plugin for this slot; the one it replaces is no longer used and goes.
	n, err := c.WithStage("", "scorers.0", PluginSpec{Name: "prefix", Type: "prefix-cache-scorer"}, nil, "PUT /admin/stages/scorers.0")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range n.Plugins {
		names = append(names, p.Name)
	}
	if !slices.Equal(names, []string{"kv", "pick", "prefix"}) || n.Pipeline.Scorers[0].PluginRef != "prefix" || n.Pipeline.Scorers[0].WeightOr1() != 3 {
		t.Errorf("plugins %v, scorers %+v", names, n.Pipeline.Scorers)
	}
	if c.Pipeline.Scorers[0].PluginRef != "queue" || len(c.Plugins) != 3 {
		t.Error("WithStage changed the config it copied")
	}
	// No name: the slot's plugin is redeclared in place; a weight replaces the slot's.
	w := 0.5
	n, err = c.WithStage("", "scorers.1", PluginSpec{Type: "queue-scorer"}, &w, "swap")
	if err != nil {
		t.Fatal(err)
	}
	if p := n.Plugin("kv"); p == nil || p.Type != "queue-scorer" || n.Pipeline.Scorers[1].WeightOr1() != 0.5 {
		t.Errorf("kv now %+v, weight %v", p, n.Pipeline.Scorers[1].WeightOr1())
	}
	if *c.Pipeline.Scorers[0].Weight != 3 || c.Pipeline.Scorers[1].Weight != nil {
		t.Error("WithStage changed the weights of the config it copied")
	}
	if !strings.HasPrefix(n.Origin(), "swap (on ") {
		t.Errorf("origin %q", n.Origin())
	}

	_, err = c.WithStage("", "producer", PluginSpec{Type: "queue-scorer"}, nil, "swap")
	if !errors.Is(err, ErrNoSlot) || !strings.Contains(err.Error(), "scorers.0, scorers.1, picker") {
		t.Errorf("missing slot: %v", err)
	}
	_, err = c.WithStage("", "picker", PluginSpec{Name: "Bad Name", Type: "max-score-picker"}, nil, "PUT /admin/stages/picker")
	if err == nil || !strings.HasPrefix(err.Error(), "PUT /admin/stages/picker: plugins[") {
		t.Errorf("invalid spec: %v, want an error naming the request and the field", err)
	}
}

func TestCheckAdminAccess(t *testing.T) {
	t.Setenv(AdminTokenEnv, "")
	t.Setenv(ReadTokenEnv, "")
	for _, tc := range []struct {
		listen, token string
		ok            bool
	}{
		{"127.0.0.1:9090", "", true},
		{"[::1]:9090", "", true},
		{"localhost:9090", "", true},
		{"0.0.0.0:9090", "", false},
		{":9090", "", false},
		{"10.0.0.5:9090", "", false},
		{"0.0.0.0:9090", "t0ken-of-16-chars", true},
	} {
		c := &Config{Server: Server{AdminListen: tc.listen, AdminToken: tc.token}}
		if err := c.CheckAdminAccess(); (err == nil) != tc.ok {
			t.Errorf("%s with token %q: err %v, want ok %v", tc.listen, tc.token, err, tc.ok)
		}
	}
	t.Setenv(AdminTokenEnv, "token-from-the-env")
	c := &Config{Server: Server{AdminListen: "0.0.0.0:9090", AdminToken: "token-from-the-file"}}
	if err := c.CheckAdminAccess(); err != nil || c.AdminToken() != "token-from-the-env" {
		t.Errorf("env token: err %v, token %q", err, c.AdminToken())
	}
	// The environment's tokens follow the file's rules (TestTokenRules), named by their variable.
	for _, tc := range []struct{ env, value, want string }{
		{AdminTokenEnv, "from-env", "$FORESIGHT_ADMIN_TOKEN must be at least 16 characters long, got 8"},
		{AdminTokenEnv, "                ", "$FORESIGHT_ADMIN_TOKEN must be at least 16 printable characters, got only whitespace"},
		{ReadTokenEnv, "x", "$FORESIGHT_READ_TOKEN must be at least 16 characters long, got 1"},
		{ReadTokenEnv, "token-from-the-env", "the read-only token (server.readToken or $FORESIGHT_READ_TOKEN) is the admin token"},
	} {
		t.Setenv(AdminTokenEnv, "token-from-the-env")
		t.Setenv(ReadTokenEnv, "")
		t.Setenv(tc.env, tc.value)
		if err := c.CheckAdminAccess(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("$%s=%q: %v, want %q", tc.env, tc.value, err, tc.want)
		}
	}
}

func TestExperimentValidation(t *testing.T) {
	head := `
plugins:
  - {name: queue, type: queue-scorer}
  - {name: kv, type: kv-cache-utilization-scorer}
  - {name: pick, type: max-score-picker}
  - {name: rr, type: round-robin-picker}
pipeline:
`
	ok, err := Parse("x.yaml", []byte(head+`  scorers:
    - weight: 2
      arms:
        - {name: control, pluginRef: queue, weight: 3}
        - {pluginRef: kv}
  picker: {pluginRef: pick, shadow: {pluginRef: rr}}
`))
	if err == nil || !strings.Contains(err.Error(), "only one slot may hold an experiment") {
		t.Errorf("two experiments: %v", err)
	}
	ok, err = Parse("x.yaml", []byte(head+`  scorers:
    - weight: 2
      arms:
        - {name: control, pluginRef: queue, weight: 3}
        - {pluginRef: kv}
  picker: {pluginRef: pick}
`+"  # rr unused\n"))
	if err == nil || !strings.Contains(err.Error(), `plugin "rr" is declared but the pipeline does not use it`) {
		t.Fatalf("unused plugin: %v", err)
	}
	ok, err = Parse("x.yaml", []byte(`
plugins:
  - {name: queue, type: queue-scorer}
  - {name: kv, type: kv-cache-utilization-scorer}
pipeline:
  scorers:
    - weight: 2
      arms:
        - {name: control, pluginRef: queue, weight: 3}
        - {pluginRef: kv}
`))
	if err != nil {
		t.Fatal(err)
	}
	slot, ref := ok.Experiment()
	if slot != "scorers.0" || ref.Arms[1].ArmName() != "kv" || ref.Arms[0].ArmWeight() != 3 || ref.Arms[1].ArmWeight() != 1 ||
		ok.StageOf("kv") != sdk.StageScorer || ref.WeightOr1() != 2 {
		t.Errorf("experiment %s %+v", slot, ref)
	}
	n, err := ok.WithStage("", "scorers.0", PluginSpec{Type: "prefix-cache-scorer"}, nil, "swap")
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := n.Experiment(); s != "" || n.Pipeline.Scorers[0].PluginRef != "queue" || n.Plugin("kv") != nil {
		t.Errorf("a swap must end the experiment with the first arm's name: %+v", n.Pipeline.Scorers[0])
	}
	if s, _ := ok.Experiment(); s != "scorers.0" {
		t.Error("WithStage changed the arms of the config it copied")
	}

	bad := map[string]string{
		"pluginRef and arms": `  scorers: [{pluginRef: queue, arms: [{pluginRef: kv}, {pluginRef: queue}]}]`,
		"one arm":            `  scorers: [{arms: [{pluginRef: kv}]}]`,
		"same name twice":    `  scorers: [{arms: [{name: x, pluginRef: kv}, {name: x, pluginRef: queue}]}]`,
		"wrong stage":        `  scorers: [{arms: [{pluginRef: kv}, {pluginRef: pick}]}]`,
		"zero weights":       `  scorers: [{arms: [{pluginRef: kv, weight: 0}, {pluginRef: queue, weight: 0}]}]`,
		"shadow weight":      `  scorers: [{pluginRef: kv, shadow: {pluginRef: queue, weight: 1}}]`,
		"shadow is primary":  `  scorers: [{arms: [{pluginRef: kv}, {pluginRef: queue}], shadow: {name: s, pluginRef: kv}}]`,
	}
	want := map[string]string{
		"pluginRef and arms": "pluginRef or arms, not both", "one arm": "at least two arms",
		"same name twice": `arm "x" is named twice`, "wrong stage": "already serves as scorer",
		"zero weights": "every arm has weight 0", "shadow weight": "a shadow takes no share",
		"shadow is primary": "a shadow must be another plugin",
	}
	for name, pipe := range bad {
		yaml := `
plugins:
  - {name: queue, type: queue-scorer}
  - {name: kv, type: kv-cache-utilization-scorer}
  - {name: pick, type: max-score-picker}
pipeline:
` + pipe + "\n  picker: {pluginRef: pick}\n"
		_, err := Parse("x.yaml", []byte(yaml))
		if err == nil || !strings.Contains(err.Error(), want[name]) {
			t.Errorf("%s: %v, want an error containing %q", name, err, want[name])
		}
	}
	_, err = Parse("x.yaml", []byte(`
plugins:
  - {name: p1, type: predicted-latency-producer, path: /bin/true}
  - {name: p2, type: predicted-latency-producer, path: /bin/true}
pipeline:
  producer: {pluginRef: p1, shadow: {pluginRef: p2}}
`))
	if err != nil {
		t.Errorf("a shadowed producer: %v", err)
	}
}
