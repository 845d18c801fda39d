package config_test

import (
	"strings"
	"testing"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/endpoints"
)

func TestParseDisaggregation(t *testing.T) {
	c, err := config.Parse("test.yaml", []byte(twoProfiles+y("disaggregation: {}")))
	if err != nil {
		t.Fatal(err)
	}
	d := c.Disaggregation
	if d.RoleLabel != endpoints.DefaultRoleLabel || d.Split != config.SplitAdaptive || d.PrefillHeader != config.DefaultPrefillHeader {
		t.Errorf("defaults %+v", *d)
	}
	// Unset profiles: every profile splits, and picks its own prefill server.
	if !d.Splits("load") || !d.Splits("slo") || d.PrefillProfileFor("slo") != "slo" {
		t.Errorf("without profiles named, Splits(load) %v, Splits(slo) %v, PrefillProfileFor(slo) %q", d.Splits("load"), d.Splits("slo"), d.PrefillProfileFor("slo"))
	}
	c, err = config.Parse("test.yaml", []byte(twoProfiles+y("disaggregation: {decodeProfile: slo, prefillProfile: load, split: always}")))
	if err != nil {
		t.Fatal(err)
	}
	d = c.Disaggregation
	if !d.Splits("slo") || d.Splits("load") || d.PrefillProfileFor("slo") != "load" {
		t.Errorf("decodeProfile slo: Splits(slo) %v, Splits(load) %v, PrefillProfileFor(slo) %q", d.Splits("slo"), d.Splits("load"), d.PrefillProfileFor("slo"))
	}
	d.Split = config.SplitNever
	if d.Splits("slo") {
		t.Error("split never splits")
	}
	var none *config.Disaggregation
	if none.Splits("slo") {
		t.Error("no disaggregation section splits")
	}
}

func TestParseDisaggregationErrors(t *testing.T) {
	for _, tc := range []struct{ section, want string }{
		{"disaggregation: {split: sometimes}", `test.yaml:21: disaggregation.split: "sometimes" is not a split mode`},
		{"disaggregation: {roleLabel: 'bad label'}", `disaggregation.roleLabel: "bad label" is not a label name`},
		{"disaggregation: {prefillHeader: X-Bad}", `disaggregation.prefillHeader: "X-Bad" is not a header name`},
		{"disaggregation: {prefillProfile: nope}", `disaggregation.prefillProfile: no profile named "nope" (profiles: load, slo)`},
		{"disaggregation: {decodeProfile: nope}", `disaggregation.decodeProfile: no profile named "nope"`},
		{y("disaggregation: {}", "endpoints:", "  static:", "  - {address: 127.0.0.1:8000, labels: {llm-d.ai/role: prefil}}"),
			`endpoints.static[0].labels.llm-d.ai/role: label llm-d.ai/role="prefil" names no role: give prefill, decode or both`},
	} {
		_, err := config.Parse("test.yaml", []byte(twoProfiles+tc.section))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.section, err, tc.want)
		}
	}
}
