package deploy

import (
	"encoding/json"
	"go/version"
	"os"
	"path"
	"regexp"
	"slices"
	"strconv"
	"testing"
)

// image is what the repository's Dockerfile says of the image the chart runs.
type image struct {
	goVersion   string   // ARG GO_VERSION: the Go the binaries are built with
	binDir      string   // where the runtime stage copies bin/
	user, group int64    // USER uid:gid
	entrypoint  []string // ENTRYPOINT
	cmd         []string // CMD
}

func readDockerfile(t *testing.T) image {
	t.Helper()
	data, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	find := func(what, re string) []string {
		m := regexp.MustCompile(`(?m)` + re).FindStringSubmatch(string(data))
		if m == nil {
			t.Fatalf("../Dockerfile: no %s (a line matching %s)", what, re)
		}
		return m[1:]
	}
	exec := func(what string) []string {
		var args []string
		if err := json.Unmarshal([]byte(find(what, `^`+what+` (\[.*\])$`)[0]), &args); err != nil {
			t.Fatalf("../Dockerfile: %s is not in exec form (a JSON array): %v", what, err)
		}
		return args
	}
	img := image{
		goVersion:  find("Go version", `^ARG GO_VERSION=(\S+)$`)[0],
		binDir:     path.Clean(find("runtime bin directory", `^COPY --from=build /src/bin/ (\S+)$`)[0]),
		entrypoint: exec("ENTRYPOINT"),
		cmd:        exec("CMD"),
	}
	ids := find("numeric USER", `^USER (\d+):(\d+)$`)
	img.user, _ = strconv.ParseInt(ids[0], 10, 64)
	img.group, _ = strconv.ParseInt(ids[1], 10, 64)
	return img
}

// TestImageMatchesChart checks the Dockerfile against go.mod and against what the chart's
// Deployment expects of the image: the binary's path, the non-root user, serve's arguments.
func TestImageMatchesChart(t *testing.T) {
	img := readDockerfile(t)
	mod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("../go.mod: no go line")
	}
	goMod, goImage := "go"+string(m[1]), "go"+img.goVersion
	if !version.IsValid(goImage) || version.Lang(goImage) != version.Lang(goMod) || version.Compare(goImage, goMod) < 0 {
		t.Errorf("Dockerfile GO_VERSION %s: want the release of go.mod's go line (%s), at or above it", img.goVersion, m[1])
	}
	if want := []string{path.Join(img.binDir, "foresight")}; !slices.Equal(img.entrypoint, want) {
		t.Errorf("Dockerfile ENTRYPOINT %q: want %q, the router in the bin directory", img.entrypoint, want)
	}

	r := decodeRendering(t, render(t))
	pod := r.deployment.Spec.Template.Spec
	c := pod.Containers[0]
	if !slices.Equal(c.Command, img.entrypoint) {
		t.Errorf("Deployment command %q: want the image's ENTRYPOINT %q", c.Command, img.entrypoint)
	}
	sc := pod.SecurityContext
	if sc == nil || sc.RunAsUser == nil || *sc.RunAsUser != img.user || sc.RunAsGroup == nil || *sc.RunAsGroup != img.group {
		t.Errorf("Deployment pod securityContext %+v: want runAsUser %d and runAsGroup %d, the image's USER", sc, img.user, img.group)
	}
	for _, flag := range []string{"--config", "--ext-proc"} {
		if got, want := flagValue(c.Args, flag), flagValue(img.cmd, flag); got != want || want == "" {
			t.Errorf("%s: the Deployment passes %q, the image's CMD %q: want the same", flag, got, want)
		}
	}
}

// flagValue returns the value following flag in args, or "".
func flagValue(args []string, flag string) string {
	if i := slices.Index(args, flag); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}
