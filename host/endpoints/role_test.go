package endpoints

import "testing"

func TestRoleOf(t *testing.T) {
	for _, tc := range []struct {
		labels            map[string]string
		want              Role
		prefills, decodes bool
	}{
		{nil, RoleDecode, false, true}, // unlabelled: decode, as llm-d's filters treat it
		{map[string]string{DefaultRoleLabel: "prefill"}, RolePrefill, true, false},
		{map[string]string{DefaultRoleLabel: "decode"}, RoleDecode, false, true},
		{map[string]string{DefaultRoleLabel: "both"}, RoleBoth, true, true},
		{map[string]string{DefaultRoleLabel: "prefill-decode"}, RoleBoth, true, true},
		{map[string]string{DefaultRoleLabel: "encode-prefill"}, RolePrefill, true, false},
		{map[string]string{DefaultRoleLabel: "encode"}, RoleNone, false, false},
	} {
		got, err := RoleOf(tc.labels, DefaultRoleLabel)
		if err != nil || got != tc.want || got.Prefills() != tc.prefills || got.Decodes() != tc.decodes {
			t.Errorf("RoleOf(%v) = %v (prefills %v, decodes %v), %v; want %v", tc.labels, got, got.Prefills(), got.Decodes(), err, tc.want)
		}
	}
	got, err := RoleOf(map[string]string{"tier": "prefill"}, "tier")
	if err != nil || got != RolePrefill {
		t.Errorf("a configured label: %v, %v", got, err)
	}
	if got, err := RoleOf(map[string]string{DefaultRoleLabel: "Prefill"}, DefaultRoleLabel); err == nil || got != RoleNone {
		t.Errorf("an unknown value: %v, %v; want RoleNone and an error", got, err)
	}
}
