package deploy

import (
	"bytes"
	"cmp"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	"helm.sh/helm/v3/pkg/releaseutil"
	"helm.sh/helm/v3/pkg/strvals"
)

// The chart, and the release the tests render it as.
const (
	chartDir  = "helm/foresight"
	release   = "foresight"
	namespace = "foresight"
)

// The tests render and lint the chart with Helm's own packages (helm.sh/helm/v3 at the version
// go.mod pins), in process, as `helm template` and `helm lint --strict` do: no helm binary to build
// or install.

// render renders the chart as `helm template foresight helm/foresight --namespace foresight ARGS`
// prints it, failing the test when it cannot.
func render(t *testing.T, args ...string) []byte {
	t.Helper()
	out, err := helmTemplate(args...)
	if err != nil {
		t.Fatalf("helm template %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// helmTemplate renders the chart as helm template does with args, which are `--values FILE` and
// `--set K=V,...` pairs: the values files merged in order, then the --set values, checked against
// values.schema.json; the templates rendered for a client-only install against the Kubernetes of
// go.mod's client-go; NOTES.txt left out, the manifests in Helm's install order, each under its
// `# Source:` line.
func helmTemplate(args ...string) ([]byte, error) {
	vals, err := values(args)
	if err != nil {
		return nil, err
	}
	ch, err := loader.Load(chartDir)
	if err != nil {
		return nil, err
	}
	caps, err := capabilities()
	if err != nil {
		return nil, err
	}
	if v := ch.Metadata.KubeVersion; v != "" && !chartutil.IsCompatibleRange(v, caps.KubeVersion.String()) {
		return nil, fmt.Errorf("chart requires kubeVersion: %s which is incompatible with Kubernetes %s", v, caps.KubeVersion)
	}
	top, err := chartutil.ToRenderValues(ch, vals, chartutil.ReleaseOptions{Name: release, Namespace: namespace,
		Revision: 1, IsInstall: true}, caps)
	if err != nil {
		return nil, err
	}
	files, err := engine.Render(ch, top)
	if err != nil {
		return nil, err
	}
	for name := range files {
		if path.Base(name) == "NOTES.txt" {
			delete(files, name)
		}
	}
	hooks, manifests, err := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
	if err != nil {
		return nil, err
	}
	var body bytes.Buffer
	for _, m := range manifests {
		fmt.Fprintf(&body, "---\n# Source: %s\n%s\n", m.Name, m.Content)
	}
	var out bytes.Buffer
	fmt.Fprintln(&out, strings.TrimSpace(body.String()))
	for _, h := range hooks {
		fmt.Fprintf(&out, "---\n# Source: %s\n%s\n", h.Path, h.Manifest)
	}
	return out.Bytes(), nil
}

// values merges the values of args as helm does: every --values file in order (a later file's
// keys over an earlier's, maps merged key by key), then every --set in order.
func values(args []string) (map[string]any, error) {
	if len(args)%2 != 0 {
		return nil, fmt.Errorf("args %q: want --values FILE and --set K=V pairs", args)
	}
	vals := map[string]any{}
	for i := 0; i < len(args); i += 2 {
		if args[i] != "--values" {
			continue
		}
		data, err := os.ReadFile(args[i+1])
		if err != nil {
			return nil, err
		}
		file, err := chartutil.ReadValues(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", args[i+1], err)
		}
		merge(vals, file)
	}
	for i := 0; i < len(args); i += 2 {
		switch args[i] {
		case "--values":
		case "--set":
			if err := strvals.ParseInto(args[i+1], vals); err != nil {
				return nil, fmt.Errorf("--set %s: %w", args[i+1], err)
			}
		default:
			return nil, fmt.Errorf("args %q: %s is neither --values nor --set", args, args[i])
		}
	}
	return vals, nil
}

// merge sets src's keys into dst, merging the maps both hold key by key.
func merge(dst, src map[string]any) {
	for k, v := range src {
		if sub, ok := v.(map[string]any); ok {
			if into, ok := dst[k].(map[string]any); ok {
				merge(into, sub)
				continue
			}
		}
		dst[k] = v
	}
}

// capabilities are Helm's defaults for a client-only rendering, with the Kubernetes version of the
// client-go the module requires (k8s.io/client-go v0.N.x is Kubernetes 1.N), the version the
// chart's objects are decoded and checked against.
func capabilities() (*chartutil.Capabilities, error) {
	v, err := kubeVersion()
	if err != nil {
		return nil, err
	}
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion = *v
	return caps, nil
}

// kubeVersion is the Kubernetes version of the client-go the repository's go.mod requires.
func kubeVersion() (*chartutil.KubeVersion, error) {
	data, err := os.ReadFile("../go.mod")
	if err != nil {
		return nil, err
	}
	m := regexp.MustCompile(`(?m)^\s*k8s\.io/client-go v0\.(\d+)\.`).FindSubmatch(data)
	if m == nil {
		return nil, fmt.Errorf("../go.mod requires no k8s.io/client-go v0.N.x")
	}
	return chartutil.ParseKubeVersion("v1." + string(m[1]) + ".0")
}

// TestChartLints lints the chart as `helm lint --strict` does, with its defaults and with each value
// set of helm/foresight/ci: any warning or error fails it (information, such as a missing icon,
// does not).
func TestChartLints(t *testing.T) {
	sets, err := filepath.Glob(filepath.Join(chartDir, "ci", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	kube, err := kubeVersion()
	if err != nil {
		t.Fatal(err)
	}
	for _, set := range append([]string{""}, sets...) {
		name := cmp.Or(filepath.Base(set), "defaults")
		t.Run(name, func(t *testing.T) {
			var args []string
			if set != "" {
				args = []string{"--values", set}
			}
			vals, err := values(args)
			if err != nil {
				t.Fatal(err)
			}
			linted := lint.AllWithKubeVersion(chartDir, vals, namespace, kube)
			for _, m := range linted.Messages {
				if m.Severity >= support.WarningSev {
					t.Errorf("helm lint --strict %s: %s", strings.Join(args, " "), m)
				}
			}
		})
	}
}
