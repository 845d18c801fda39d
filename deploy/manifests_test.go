package deploy

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite deploy/manifests/foresight.yaml from the chart (make manifests)")

// The plain manifests: the chart's defaults, but the admin token comes from a Secret the operator
// creates (the chart would generate one, different at every rendering).
const manifestsFile = "manifests/foresight.yaml"

var manifestArgs = []string{"--set", "adminToken.existingSecret=foresight-admin-token"}

var manifestsHeader = fmt.Sprintf(`# Foresight on Kubernetes without Helm: the chart deploy/helm/foresight with its defaults, in
# namespace %[1]s, the admin token from a Secret you create. Do not edit: make manifests writes
# this file, and the test in deploy/ fails when it differs from the chart's rendering,
#   helm template %[2]s deploy/helm/foresight --namespace %[1]s %[3]s
# docs/kubernetes.md explains the chart's values. To install:
#
#   kubectl create namespace %[1]s
#   kubectl -n %[1]s create secret generic foresight-admin-token --from-literal=token="$(openssl rand -hex 24)"
#   kubectl apply -f deploy/manifests/foresight.yaml
`, namespace, release, strings.Join(manifestArgs, " "))

// TestManifestsUpToDate fails when deploy/manifests/foresight.yaml is not the chart's rendering
// (with -update, as make manifests runs it, it rewrites the file), and checks its objects as
// TestChart checks the chart's.
func TestManifestsUpToDate(t *testing.T) {
	want := append([]byte(manifestsHeader), render(t, manifestArgs...)...)
	if *update {
		if err := os.WriteFile(manifestsFile, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(manifestsFile)
	if err != nil {
		t.Fatalf("%v: run make manifests", err)
	}
	if !bytes.Equal(got, want) {
		gotLines, wantLines := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		i := 0
		for i < len(gotLines) && i < len(wantLines) && gotLines[i] == wantLines[i] {
			i++
		}
		line := func(l []string) string {
			if i < len(l) {
				return l[i]
			}
			return "(end of file)"
		}
		t.Fatalf("deploy/%s is stale: run make manifests and commit it (line %d: the file has %q, the chart renders %q)",
			manifestsFile, i+1, line(gotLines), line(wantLines))
	}
	checkObjects(t, decodeRendering(t, got), valueSet{name: "manifests", secret: "foresight-admin-token", secretKey: "token",
		probe: "grpc", modelLabels: map[string]string{"app": "vllm-llama3-8b-instruct"}})
}
