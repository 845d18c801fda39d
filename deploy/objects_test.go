package deploy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
	sigsjson "sigs.k8s.io/json"
	sigsyaml "sigs.k8s.io/yaml"
)

// rendered holds the objects of one rendering of the chart, each decoded strictly into its type.
// The chart renders at most one object of each kind.
type rendered struct {
	deployment     *appsv1.Deployment
	service        *corev1.Service
	serviceAccount *corev1.ServiceAccount
	role           *rbacv1.Role
	roleBinding    *rbacv1.RoleBinding
	pdb            *policyv1.PodDisruptionBudget
	configMap      *corev1.ConfigMap
	secret         *corev1.Secret
	pool           *inferencePool
	route          *httpRoute
	// nats and natsService are the NATS server the chart runs for the state plane (nats.enabled).
	nats        *appsv1.StatefulSet
	natsService *corev1.Service
	// objects lists every object as "Kind name" with its namespace.
	objects map[string]string
}

// strict decodes the kinds of client-go's scheme, failing on unknown and duplicate fields.
var strict = serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()

var (
	inferencePoolKind = schema.GroupVersionKind{Group: inferenceGroup, Version: "v1", Kind: "InferencePool"}
	httpRouteKind     = schema.GroupVersionKind{Group: gatewayGroup, Version: "v1", Kind: "HTTPRoute"}
)

// decodeAll decodes every document of a multi-document YAML stream (helm template's output).
func decodeAll(data []byte) (*rendered, error) {
	r := &rendered{objects: map[string]string{}}
	docs := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for i := 0; ; i++ {
		doc, err := docs.Read()
		if errors.Is(err, io.EOF) {
			return r, nil
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		js, err := sigsyaml.YAMLToJSONStrict(doc) // a key given twice fails
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if string(bytes.TrimSpace(js)) == "null" { // comments only
			continue
		}
		var tm metav1.TypeMeta
		if err := json.Unmarshal(js, &tm); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if err := r.add(tm.GroupVersionKind(), js); err != nil {
			return nil, fmt.Errorf("document %d (%s): %w", i, tm.Kind, err)
		}
	}
}

func (r *rendered) add(gvk schema.GroupVersionKind, js []byte) error {
	var (
		meta metav1.Object
		err  error
	)
	switch gvk {
	case inferencePoolKind:
		p := &inferencePool{}
		if err := decodeStrictJSON(js, p); err != nil {
			return err
		}
		if err := p.validate(); err != nil {
			return err
		}
		meta, err = p, assign(&r.pool, p)
	case httpRouteKind:
		rt := &httpRoute{}
		if err := decodeStrictJSON(js, rt); err != nil {
			return err
		}
		if err := rt.validate(); err != nil {
			return err
		}
		meta, err = rt, assign(&r.route, rt)
	default:
		obj, _, derr := strict.Decode(js, nil, nil)
		if derr != nil {
			return derr
		}
		switch o := obj.(type) {
		case *appsv1.Deployment:
			meta, err = o, assign(&r.deployment, o)
		case *corev1.Service:
			if o.Labels["app.kubernetes.io/component"] == "nats" {
				meta, err = o, assign(&r.natsService, o)
			} else {
				meta, err = o, assign(&r.service, o)
			}
		case *appsv1.StatefulSet:
			meta, err = o, assign(&r.nats, o)
		case *corev1.ServiceAccount:
			meta, err = o, assign(&r.serviceAccount, o)
		case *rbacv1.Role:
			meta, err = o, assign(&r.role, o)
		case *rbacv1.RoleBinding:
			meta, err = o, assign(&r.roleBinding, o)
		case *policyv1.PodDisruptionBudget:
			meta, err = o, assign(&r.pdb, o)
		case *corev1.ConfigMap:
			meta, err = o, assign(&r.configMap, o)
		case *corev1.Secret:
			meta, err = o, assign(&r.secret, o)
		default:
			return fmt.Errorf("%v: a kind the chart is not known to render; add it to deploy's checks", gvk)
		}
	}
	if err != nil {
		return err
	}
	key := gvk.Kind + " " + meta.GetName()
	if _, dup := r.objects[key]; dup {
		return fmt.Errorf("%s is rendered twice", key)
	}
	r.objects[key] = meta.GetNamespace()
	return nil
}

// assign sets *dst to v, refusing a second object of a kind: the chart renders at most one.
func assign[T any](dst **T, v *T) error {
	if *dst != nil {
		return fmt.Errorf("a second %T in one rendering; the checks expect one", v)
	}
	*dst = v
	return nil
}

// decodeStrictJSON decodes js into v as the API server does: field names case-sensitive, an
// unknown or duplicate field an error.
func decodeStrictJSON(js []byte, v any) error {
	strictErrs, err := sigsjson.UnmarshalStrict(js, v)
	if err != nil {
		return err
	}
	return errors.Join(strictErrs...)
}

// TestDecodeIsStrict: what the API server would refuse or silently drop fails to decode.
func TestDecodeIsStrict(t *testing.T) {
	const (
		deployment = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: a, namespace: foresight}\n" +
			"spec:\n  selector: {matchLabels: {a: b}}\n  template:\n    metadata: {labels: {a: b}}\n    spec:\n      containers: [{name: c, image: i}]\n"
		pool = "apiVersion: inference.networking.k8s.io/v1\nkind: InferencePool\nmetadata: {name: p}\n" +
			"spec:\n  selector: {matchLabels: {a: b}}\n  targetPorts: [{number: 8000}]\n  endpointPickerRef: {name: s, port: {number: 9002}}\n"
		route = "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: r}\n" +
			"spec:\n  parentRefs: [{name: g}]\n  rules: [{backendRefs: [{group: inference.networking.k8s.io, kind: InferencePool, name: p}]}]\n"
	)
	for _, ok := range []string{deployment, pool, route} {
		if _, err := decodeAll([]byte(ok)); err != nil {
			t.Fatalf("a valid object fails to decode: %v\n%s", err, ok)
		}
	}
	for name, doc := range map[string]string{
		"unknown field":         strings.Replace(deployment, "  selector:", "  replica: 2\n  selector:", 1),
		"field of another case": strings.Replace(deployment, "  selector:", "  Replicas: 2\n  selector:", 1),
		"key given twice":       strings.Replace(deployment, "metadata: {name: a, namespace: foresight}", "metadata: {name: a, name: b}", 1),
		"wrong type":            strings.Replace(deployment, "  selector:", "  replicas: two\n  selector:", 1),
		"unknown pool field":    strings.Replace(pool, "  targetPorts:", "  targetPortz:", 1),
		"pool field case":       strings.Replace(pool, "endpointPickerRef: {name: s", "endpointPickerRef: {Name: s", 1),
		"pool without ports":    strings.Replace(pool, "  targetPorts: [{number: 8000}]\n", "", 1),
		"pool failure mode":     strings.Replace(pool, "port: {number: 9002}}", "port: {number: 9002}, failureMode: Open}", 1),
		"picker without port":   strings.Replace(pool, ", port: {number: 9002}", "", 1),
		"unknown route field":   strings.Replace(route, "  rules:", "  rule:", 1),
		"route timeout":         strings.Replace(route, "name: p}]", "name: p}], timeouts: {request: 5 minutes}", 1),
		"unknown kind":          "apiVersion: v1\nkind: Nonsense\nmetadata: {name: x}\n",
		"second Deployment":     deployment + "---\n" + strings.Replace(deployment, "name: a,", "name: b,", 1),
	} {
		if _, err := decodeAll([]byte(doc)); err == nil {
			t.Errorf("%s: decoded without an error:\n%s", name, doc)
		}
	}
}
