package deploy

import (
	"fmt"
	"regexp"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The two APIs the chart renders that k8s.io/api does not hold, written from their published API
// references because their Go modules are not available to this repository: the Gateway API
// Inference Extension's InferencePool (inference.networking.k8s.io/v1) and the Gateway API's
// HTTPRoute (gateway.networking.k8s.io/v1). They are decoded strictly, so a field that is not here
// fails: the HTTPRoute holds the fields the chart may render, and adding one to the chart means
// adding it here from the reference. validate checks the references' required fields, bounds and
// enums, which the API server would check on apply.

const (
	inferenceGroup = "inference.networking.k8s.io"
	gatewayGroup   = "gateway.networking.k8s.io"
)

// inferencePool is an InferencePool: a pool of model server pods whose endpoint picker a Gateway
// asks which pod serves each request.
type inferencePool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              inferencePoolSpec `json:"spec"`
}

type inferencePoolSpec struct {
	// Selector selects the pool's pods in its namespace, by labels only.
	Selector poolSelector `json:"selector"`
	// TargetPorts: every ready pod serves on each, one endpoint per pod and port (1 to 8, unique).
	TargetPorts []poolPort `json:"targetPorts"`
	// AppProtocol is http (HTTP/1.1, the default) or kubernetes.io/h2c.
	AppProtocol string `json:"appProtocol,omitempty"`
	// EndpointPickerRef names the endpoint picker's Service.
	EndpointPickerRef endpointPickerRef `json:"endpointPickerRef"`
}

type poolSelector struct {
	MatchLabels map[string]string `json:"matchLabels"`
}

type poolPort struct {
	Number int32 `json:"number"`
}

type endpointPickerRef struct {
	// Group is the referent's API group: "" (core, the default) for a Service.
	Group *string `json:"group,omitempty"`
	// Kind defaults to Service.
	Kind string `json:"kind,omitempty"`
	Name string `json:"name"`
	// Port is required when Kind is Service.
	Port *poolPort `json:"port,omitempty"`
	// FailureMode is FailOpen or FailClose (the default).
	FailureMode string `json:"failureMode,omitempty"`
}

func (p *inferencePool) validate() error {
	s := p.Spec
	if len(s.Selector.MatchLabels) == 0 {
		return fmt.Errorf("spec.selector.matchLabels: required, got none")
	}
	if n := len(s.TargetPorts); n < 1 || n > 8 {
		return fmt.Errorf("spec.targetPorts: 1 to 8 ports, got %d", n)
	}
	seen := map[int32]bool{}
	for i, tp := range s.TargetPorts {
		if tp.Number < 1 || tp.Number > 65535 || seen[tp.Number] {
			return fmt.Errorf("spec.targetPorts[%d].number: a port in [1, 65535] not listed before, got %d", i, tp.Number)
		}
		seen[tp.Number] = true
	}
	if a := s.AppProtocol; a != "" && a != "http" && a != "kubernetes.io/h2c" {
		return fmt.Errorf("spec.appProtocol: http or kubernetes.io/h2c, got %q", a)
	}
	ref := s.EndpointPickerRef
	if ref.Name == "" {
		return fmt.Errorf("spec.endpointPickerRef.name: required, got none")
	}
	if ref.Kind == "" || ref.Kind == "Service" {
		if ref.Group != nil && *ref.Group != "" {
			return fmt.Errorf("spec.endpointPickerRef.group: a Service is in the core group \"\", got %q", *ref.Group)
		}
		if ref.Port == nil || ref.Port.Number < 1 || ref.Port.Number > 65535 {
			return fmt.Errorf("spec.endpointPickerRef.port.number: required for a Service, in [1, 65535]")
		}
	}
	if f := ref.FailureMode; f != "" && f != "FailOpen" && f != "FailClose" {
		return fmt.Errorf("spec.endpointPickerRef.failureMode: FailOpen or FailClose, got %q", f)
	}
	return nil
}

// httpRoute is a Gateway API HTTPRoute: how a Gateway's HTTP requests reach backends.
type httpRoute struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              httpRouteSpec `json:"spec"`
}

type httpRouteSpec struct {
	ParentRefs []parentReference `json:"parentRefs,omitempty"`
	Hostnames  []string          `json:"hostnames,omitempty"`
	Rules      []httpRouteRule   `json:"rules,omitempty"`
}

type parentReference struct {
	Group       *string `json:"group,omitempty"`
	Kind        *string `json:"kind,omitempty"`
	Namespace   *string `json:"namespace,omitempty"`
	Name        string  `json:"name"`
	SectionName *string `json:"sectionName,omitempty"`
	Port        *int32  `json:"port,omitempty"`
}

type httpRouteRule struct {
	Name        *string            `json:"name,omitempty"`
	Matches     []httpRouteMatch   `json:"matches,omitempty"`
	BackendRefs []httpBackendRef   `json:"backendRefs,omitempty"`
	Timeouts    *httpRouteTimeouts `json:"timeouts,omitempty"`
}

type httpRouteMatch struct {
	Path    *httpPathMatch    `json:"path,omitempty"`
	Headers []httpHeaderMatch `json:"headers,omitempty"`
	Method  *string           `json:"method,omitempty"`
}

type httpPathMatch struct {
	Type  *string `json:"type,omitempty"`
	Value *string `json:"value,omitempty"`
}

type httpHeaderMatch struct {
	Type  *string `json:"type,omitempty"`
	Name  string  `json:"name"`
	Value string  `json:"value"`
}

type httpBackendRef struct {
	Group     *string `json:"group,omitempty"`
	Kind      *string `json:"kind,omitempty"`
	Name      string  `json:"name"`
	Namespace *string `json:"namespace,omitempty"`
	Port      *int32  `json:"port,omitempty"`
	Weight    *int32  `json:"weight,omitempty"`
}

type httpRouteTimeouts struct {
	Request        *string `json:"request,omitempty"`
	BackendRequest *string `json:"backendRequest,omitempty"`
}

// The reference's patterns: a Gateway API duration, a hostname.
var (
	gatewayDuration = regexp.MustCompile(`^([0-9]{1,5}(h|m|s|ms)){1,4}$`)
	hostname        = regexp.MustCompile(`^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

func (r *httpRoute) validate() error {
	s := r.Spec
	if n := len(s.ParentRefs); n > 32 {
		return fmt.Errorf("spec.parentRefs: at most 32, got %d", n)
	}
	for i, p := range s.ParentRefs {
		if p.Name == "" {
			return fmt.Errorf("spec.parentRefs[%d].name: required, got none", i)
		}
	}
	for i, h := range s.Hostnames {
		if !hostname.MatchString(h) {
			return fmt.Errorf("spec.hostnames[%d]: %q is not a hostname", i, h)
		}
	}
	if n := len(s.Rules); n > 16 {
		return fmt.Errorf("spec.rules: at most 16, got %d", n)
	}
	for i, rule := range s.Rules {
		for j, m := range rule.Matches {
			if m.Path == nil {
				continue
			}
			typ := "PathPrefix"
			if m.Path.Type != nil {
				typ = *m.Path.Type
			}
			if typ != "Exact" && typ != "PathPrefix" && typ != "RegularExpression" {
				return fmt.Errorf("spec.rules[%d].matches[%d].path.type: Exact, PathPrefix or RegularExpression, got %q", i, j, typ)
			}
			if v := m.Path.Value; v != nil && typ != "RegularExpression" && !strings.HasPrefix(*v, "/") {
				return fmt.Errorf("spec.rules[%d].matches[%d].path.value: must start with /, got %q", i, j, *v)
			}
		}
		for j, b := range rule.BackendRefs {
			if b.Name == "" {
				return fmt.Errorf("spec.rules[%d].backendRefs[%d].name: required, got none", i, j)
			}
		}
		if to := rule.Timeouts; to != nil {
			for field, d := range map[string]*string{"request": to.Request, "backendRequest": to.BackendRequest} {
				if d != nil && !gatewayDuration.MatchString(*d) {
					return fmt.Errorf("spec.rules[%d].timeouts.%s: %q is not a Gateway API duration (e.g. 300s, 1h30m)", i, field, *d)
				}
			}
		}
	}
	return nil
}
