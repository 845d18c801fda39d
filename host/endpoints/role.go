package endpoints

import "fmt"

// Role is what an endpoint of a prefill/decode disaggregated fleet serves, read from one of its
// labels (config disaggregation.roleLabel, llm-d's llm-d.ai/role by default).
type Role uint8

// The roles.
const (
	// RoleDecode serves whole requests and decodes requests prefilled elsewhere, never a prefill
	// hop: an endpoint without the label is one, as llm-d's decode filter keeps unlabelled pods
	// and its prefill filter drops them.
	RoleDecode Role = iota
	// RolePrefill serves prefill hops only.
	RolePrefill
	// RoleBoth serves either hop, and whole requests.
	RoleBoth
	// RoleNone serves neither: an encoder of an E/P/D fleet.
	RoleNone
)

// DefaultRoleLabel is llm-d's role label.
const DefaultRoleLabel = "llm-d.ai/role"

// Prefills reports whether the endpoint takes prefill hops.
func (r Role) Prefills() bool { return r == RolePrefill || r == RoleBoth }

// Decodes reports whether the endpoint takes whole requests and decode hops.
func (r Role) Decodes() bool { return r == RoleDecode || r == RoleBoth }

// roleValues are the label values a role is read from: Foresight's three and the other values
// llm-d's role filters accept (llm-d-inference-scheduler, filter/bylabel/roles.go), so that one
// pod manifest serves both routers. An encoder serves neither hop here.
var roleValues = map[string]Role{
	"decode": RoleDecode, "prefill": RolePrefill, "both": RoleBoth,
	"prefill-decode": RoleBoth, "encode-prefill": RolePrefill, "encode-prefill-decode": RoleBoth,
	"encode": RoleNone,
}

// RoleOf reads the role in labels[label]: RoleDecode without the label, an error for a value that
// names no role (the endpoint then serves neither hop, RoleNone).
func RoleOf(labels map[string]string, label string) (Role, error) {
	v, ok := labels[label]
	if !ok {
		return RoleDecode, nil
	}
	if r, ok := roleValues[v]; ok {
		return r, nil
	}
	return RoleNone, fmt.Errorf("label %s=%q names no role: give prefill, decode or both", label, v)
}
