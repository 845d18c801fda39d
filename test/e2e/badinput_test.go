package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/foresight-router/foresight/host/pluginhost"
	"github.com/foresight-router/foresight/host/router"
	"github.com/foresight-router/foresight/internal/eventually"
	"github.com/foresight-router/foresight/sim/emulator"
)

// The bad-input table of docs/operations.md is this test's table: every row there names a case
// here, every case here has its row, and each row's answer and message are what the case gets
// from a running router (or from `foresight check` for a config).

// badBench is the router the cases talk to: real plugin binaries in front of one emulated server,
// with an admin token, a read-only token and a short body timeout; open is a router of built-ins
// without a token; dir is a plugin directory of its own beside bin/plugins, for programs that are
// not plugins.
type badBench struct {
	r, open          *router.Router
	token, readToken string
	dir              string
}

// A badInput sends one bad input and returns what the user gets: the answer (an HTTP status, or
// "exit N" for a command) and the error's message.
type badInput func(t *testing.T, b *badBench) (answer, message string)

// model is the emulated server's model, which bodies name.
var model = emulator.DefaultModel

// chatWith is a valid chat body with extra members.
func chatWith(extra string) string {
	return `{"model":"` + model + `","messages":[{"role":"user","content":"Hi"}]` + extra + `}`
}

var badInputs = map[string]badInput{
	// The request body.
	"body not JSON":                 sendTo("/v1/chat/completions", `{"model":`),
	"empty body":                    sendTo("/v1/chat/completions", ``),
	"body not an object":            sendTo("/v1/chat/completions", `[]`),
	"no model":                      sendTo("/v1/chat/completions", `{"messages":[{"role":"user","content":"Hi"}]}`),
	"model not a string":            sendTo("/v1/chat/completions", `{"model":7,"messages":[{"role":"user","content":"Hi"}]}`),
	"no messages":                   sendTo("/v1/chat/completions", `{"model":"`+model+`"}`),
	"empty messages":                sendTo("/v1/chat/completions", `{"model":"`+model+`","messages":[]}`),
	"unknown role":                  sendTo("/v1/chat/completions", `{"model":"`+model+`","messages":[{"role":"robot","content":"Hi"}]}`),
	"no prompt":                     sendTo("/v1/completions", `{"model":"`+model+`"}`),
	"token-id prompt":               sendTo("/v1/completions", `{"model":"`+model+`","prompt":[1,2,3]}`),
	"several prompts":               sendTo("/v1/completions", `{"model":"`+model+`","prompt":["a","b"]}`),
	"negative max_tokens":           sendTo("/v1/chat/completions", chatWith(`,"max_tokens":-1`)),
	"fractional max_tokens":         sendTo("/v1/chat/completions", chatWith(`,"max_tokens":1.5`)),
	"stream not a boolean":          sendTo("/v1/chat/completions", chatWith(`,"stream":"true"`)),
	"stream_options without stream": sendTo("/v1/chat/completions", chatWith(`,"stream_options":{"include_usage":true}`)),
	"deeply nested body":            sendTo("/v1/chat/completions", chatWith(`,"extra":`+strings.Repeat("[", 100000)+strings.Repeat("]", 100000))),
	"body over maxBodyBytes":        sendTo("/v1/chat/completions", chatWith(`,"user":"`+strings.Repeat("x", 5<<20)+`"`)),
	"unknown model":                 sendTo("/v1/chat/completions", `{"model":"gpt-9","messages":[{"role":"user","content":"Hi"}]}`),
	"embeddings without input":      sendTo("/v1/embeddings", `{"model":"`+model+`"}`),
	"embeddings of mixed input":     sendTo("/v1/embeddings", `{"model":"`+model+`","input":["a",1]}`),
	"a response without input":      sendTo("/v1/responses", `{"model":"`+model+`"}`),
	"a response of an image":        sendTo("/v1/responses", `{"model":"`+model+`","input":[{"role":"user","content":[{"type":"input_image","image_url":"https://example.com/a.png"}]}]}`),
	"body slower than readBodyTimeout": func(t *testing.T, b *badBench) (string, string) {
		return rawRequest(t, b.r.Addr(), "POST /v1/chat/completions HTTP/1.1\r\nHost: router\r\nContent-Length: 100\r\n\r\n{\"model\":")
	},

	// Field names the router reads, in another case than theirs.
	"field name in another case":     sendTo("/v1/chat/completions", chatWith(`,"Stream":true`)),
	"field name twice, in two cases": sendTo("/v1/chat/completions", chatWith(`,"stream":false,"STREAM":true`)),
	"message field in another case":  sendTo("/v1/chat/completions", `{"model":"`+model+`","messages":[{"role":"user","Content":"Hi"}]}`),

	// A client's string the answer repeats: clipped.
	"model over 256 bytes": sendTo("/v1/chat/completions", `{"model":"`+strings.Repeat("m", 1<<20)+`","messages":[{"role":"user","content":"Hi"}]}`),

	// Request headers.
	"TTFT SLO not a number":   sendTo("/v1/chat/completions", chatWith(""), "x-llm-d-slo-ttft-ms", "abc"),
	"TTFT SLO zero":           sendTo("/v1/chat/completions", chatWith(""), "x-llm-d-slo-ttft-ms", "0"),
	"TTFT SLO overflows":      sendTo("/v1/chat/completions", chatWith(""), "x-llm-d-slo-ttft-ms", "1e309"),
	"negative TPOT SLO":       sendTo("/v1/chat/completions", chatWith(""), "x-slo-tpot-ms", "-5"),
	"unknown objective":       takenDespite("/v1/chat/completions", chatWith(`,"max_tokens":1`), "x-llm-d-inference-objective", "gold"),
	"debug flag not 0 or 1":   sendTo("/v1/chat/completions", chatWith(""), "x-foresight-debug", "yes"),
	"request id with a space": takenDespite("/v1/chat/completions", chatWith(`,"max_tokens":1`), "x-request-id", "a b"),
	"over maxHeaders header fields": func(t *testing.T, b *badBench) (string, string) {
		var h []string
		for i := range 101 {
			h = append(h, fmt.Sprintf("X-Extra-%d", i), "1")
		}
		return sendTo("/v1/chat/completions", chatWith(""), h...)(t, b)
	},
	"headers over maxHeaderBytes": sendTo("/v1/chat/completions", chatWith(""), "X-Big", strings.Repeat("x", 70<<10)),

	// Routes.
	"GET on a completion route": call(http.MethodGet, "/v1/completions", ""),
	"unknown route":             call(http.MethodPost, "/v2/chat", chatWith("")),

	// The config file, as `foresight check --config FILE` reports it (`foresight serve` alike).
	"YAML syntax error":   check("plugins: [\n"),
	"unknown field":       check(validPlugins + "servers: {}\n"),
	"wrong type of value": check(validPlugins + "server: {maxAttempts: three}\n"),
	"pluginRef to no plugin": check(`plugins:
  - {name: scorer, type: latency-scorer, path: ../bin/plugins/scorer}
pipeline:
  scorers: [{pluginRef: scorer}, {pluginRef: ghost}]
`),
	"plugin declared but unused":      check(validPlugins + "  - {name: spare, type: queue-scorer}\n"),
	"negative maxInflightPerEndpoint": check(validPlugins + "server: {maxInflightPerEndpoint: -1}\n"),
	"listen not host:port":            check(validPlugins + "server: {listen: \"8080\"}\n"),
	"two endpoints with one id":       check(validPlugins + "endpoints:\n  static: [{id: a, address: 127.0.0.1:1}, {id: a, address: 127.0.0.1:2}]\n"),
	"plugin parameters out of range":  check(strings.Replace(validPlugins, "path: ../bin/plugins/scorer}", "path: ../bin/plugins/scorer, parameters: {ttftWeight: -1}}", 1)),
	"plugin timeout over the cap":     check(strings.Replace(validPlugins, "path: ../bin/plugins/scorer}", "path: ../bin/plugins/scorer, timeout: 1000h}", 1)),

	"a short admin token":          check(validPlugins + "server: {adminToken: x}\n"),
	"a whitespace-only read token": check(validPlugins + "server: {readToken: \"                \"}\n"),
	"a plugin outside pluginDirs":  check(validPlugins + "server: {pluginDirs: [../plugins]}\n"),
	"a state plane on no NATS":     check(validPlugins + "state: {replica: r1}\n"),

	// The admin API.
	"no admin token": func(t *testing.T, b *badBench) (string, string) {
		return b.admin(t, http.MethodPost, "/admin/reload", "", "")
	},
	"wrong admin token": func(t *testing.T, b *badBench) (string, string) {
		return b.admin(t, http.MethodPost, "/admin/reload", "", "wrong")
	},
	"no token on a read route": func(t *testing.T, b *badBench) (string, string) {
		return b.admin(t, http.MethodGet, "/admin/pipeline", "", "")
	},
	"the read-only token on a reload": func(t *testing.T, b *badBench) (string, string) {
		return b.admin(t, http.MethodPost, "/admin/reload", "", b.readToken)
	},
	"unknown admin route":             adminCallAs(http.MethodGet, "/admin/nothing", ""),
	"reload with GET":                 adminCallAs(http.MethodGet, "/admin/reload", ""),
	"swap of an unknown slot":         adminCallAs(http.MethodPut, "/admin/stages/scorers.7", `{"type":"queue-scorer"}`),
	"swap body not JSON":              adminCallAs(http.MethodPut, "/admin/stages/scorers.0", `scorer please`),
	"swap body with an unknown field": adminCallAs(http.MethodPut, "/admin/stages/scorers.0", `{"type":"queue-scorer","colour":"blue"}`),
	// The router without a token: what a page of another site can make a browser send it.
	"a non-loopback Host without a token": func(t *testing.T, b *badBench) (string, string) {
		return b.openAdmin(t, "Host", "evil.example:"+port(t, b.open.AdminAddr()))
	},
	"a cross-site Origin without a token": func(t *testing.T, b *badBench) (string, string) {
		return b.openAdmin(t, "Origin", "https://evil.example", "Content-Type", "text/plain")
	},

	// Plugin binaries, swapped into scorers.0.
	"/bin/true in a plugin directory": func(t *testing.T, b *badBench) (string, string) {
		return swap(`{"name":"t","type":"latency-scorer","path":"`+filepath.Join(b.dir, "true")+`"}`)(t, b)
	},
	"/bin/sleep in a plugin directory": func(t *testing.T, b *badBench) (string, string) {
		return swap(`{"name":"s","type":"latency-scorer","path":"`+filepath.Join(b.dir, "sleep")+`","args":["60"]}`)(t, b)
	},
	"a missing binary": swap(`{"name":"m","type":"latency-scorer","path":"/nonexistent/scorer"}`),
	"a file that is not executable": func(t *testing.T, b *badBench) (string, string) {
		return swap(`{"name":"n","type":"latency-scorer","path":"`+filepath.Join(b.dir, "scorer.txt")+`"}`)(t, b)
	},
	"another type than declared":       swap(`{"name":"p","type":"weighted-random-picker","path":"../bin/plugins/scorer"}`),
	"another stage than the slot":      swap(`{"name":"f","type":"slo-headroom-tier-filter","path":"../bin/plugins/headroom"}`),
	"a checksum mismatch":              swap(`{"name":"c","type":"latency-scorer","path":"../bin/plugins/scorer","sha256":"` + strings.Repeat("0", 64) + `"}`),
	"a version outside the constraint": swap(`{"name":"v","type":"latency-scorer","path":"../bin/plugins/scorer","version":">=99.0.0"}`),
	"parameters the plugin refuses":    swap(`{"name":"r","type":"latency-scorer","path":"../bin/plugins/scorer","parameters":{"headroomSelectionStrategy":"random"}}`),
	"a shell running a command": func(t *testing.T, b *badBench) (string, string) {
		ran := filepath.Join(t.TempDir(), "ran")
		answer, message := swap(`{"name":"sh","type":"latency-scorer","path":"/bin/sh","args":["-c","touch `+ran+`"]}`)(t, b)
		if _, err := os.Stat(ran); err == nil {
			t.Errorf("the swap ran /bin/sh's command before answering %s", answer)
		}
		return answer, message
	},
	"a path that climbs out with ../": swap(`{"name":"up","type":"latency-scorer","path":"../bin/plugins/` + strings.Repeat("../", 40) + `bin/true"}`),
	"a link out of the plugin directories": func(t *testing.T, b *badBench) (string, string) {
		return swap(`{"name":"l","type":"latency-scorer","path":"`+filepath.Join(b.dir, "sh")+`"}`)(t, b)
	},
	"an unpinned swap":             adminCallAs(http.MethodPut, "/admin/stages/scorers.0", `{"name":"u","type":"latency-scorer","path":"../bin/plugins/scorer"}`),
	"the loader's variable in env": swap(`{"name":"e","type":"latency-scorer","path":"../bin/plugins/scorer","env":{"LD_PRELOAD":"/tmp/x.so"}}`),
}

// validPlugins is a config that `foresight check` accepts, to which cases add one mistake.
const validPlugins = `pipeline:
  scorers: [{pluginRef: scorer}]
plugins:
  - {name: scorer, type: latency-scorer, path: ../bin/plugins/scorer}
`

// sendTo sends body to path on the OpenAI listener with the header name/value pairs.
func sendTo(path, body string, headers ...string) badInput {
	return func(t *testing.T, b *badBench) (string, string) {
		return b.api(t, http.MethodPost, path, body, headers...)
	}
}

// takenDespite sends body to path with the header name/value pairs, a request the router takes
// despite an odd header, and describes the answer: "the engine's answer" when it is a completion,
// with ", under a new x-request-id" when its x-request-id is one the router generated in place
// of the one sent; an error's message otherwise.
func takenDespite(path, body string, headers ...string) badInput {
	return func(t *testing.T, b *badBench) (string, string) {
		req, err := http.NewRequest(http.MethodPost, "http://"+b.r.Addr()+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		var c struct{ Choices []json.RawMessage }
		if json.Unmarshal(data, &c) != nil || len(c.Choices) == 0 {
			return strconv.Itoa(resp.StatusCode), errorMessage(data)
		}
		msg := "the engine's answer"
		sent, got := req.Header.Get("x-request-id"), resp.Header.Get("x-request-id")
		if sent != "" && got != sent && regexp.MustCompile(`^[0-9a-f]{16}$`).MatchString(got) {
			msg += ", under a new x-request-id"
		}
		return strconv.Itoa(resp.StatusCode), msg
	}
}

// call sends method path with body to the OpenAI listener.
func call(method, path, body string) badInput {
	return func(t *testing.T, b *badBench) (string, string) { return b.api(t, method, path, body) }
}

// adminCallAs sends method path with body to the admin listener with the right token.
func adminCallAs(method, path, body string) badInput {
	return func(t *testing.T, b *badBench) (string, string) { return b.admin(t, method, path, body, b.token) }
}

// swap serves scorers.0 with the plugin declaration decl, pinned: without a sha256 of its own,
// decl gets the SHA-256 of the file its path names, as a swap must carry.
func swap(decl string) badInput {
	return func(t *testing.T, b *badBench) (string, string) {
		return adminCallAs(http.MethodPut, "/admin/stages/scorers.0", pinned(t, decl))(t, b)
	}
}

// pinned adds to the JSON plugin declaration decl the "sha256" of the file its path names,
// relative paths against examples/ as the router resolves them; decl as it is when it has a
// sha256 or names no file.
func pinned(t *testing.T, decl string) string {
	t.Helper()
	var d struct{ Path, SHA256 string }
	if err := json.Unmarshal([]byte(decl), &d); err != nil || d.SHA256 != "" || d.Path == "" {
		return decl
	}
	path := d.Path
	if !filepath.IsAbs(path) {
		path = filepath.Join(root, "examples", path)
	}
	sum, err := pluginhost.Checksum(path)
	if err != nil {
		return decl
	}
	return strings.TrimSuffix(decl, "}") + `,"sha256":"` + sum + `"}`
}

// pluginDir makes the bench's own plugin directory: copies of /bin/true and /bin/sleep, programs
// that are not plugins; scorer.txt, a file without the execute bit; and sh, a link to /bin/sh.
// It is filled before any process starts: a program being written while another goroutine forks
// could fail to start with "text file busy".
func pluginDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, prog := range []string{"/bin/true", "/bin/sleep"} {
		data, err := os.ReadFile(prog)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(prog)), data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "scorer.txt"), []byte("not a program\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/bin/sh", filepath.Join(dir, "sh")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// openAdmin sends POST /admin/reload to the router without a token with the header name/value
// pairs ("Host" sets the request's Host).
func (b *badBench) openAdmin(t *testing.T, headers ...string) (string, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+b.open.AdminAddr()+"/admin/reload", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i] == "Host" {
			req.Host = headers[i+1]
		} else {
			req.Header.Set(headers[i], headers[i+1])
		}
	}
	return answer(t, req)
}

// port is the port of the address host:port.
func port(t *testing.T, addr string) string {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// check runs `foresight check --config FILE` on yaml and returns its exit status and the error
// it printed (its last line).
func check(yaml string) badInput {
	return func(t *testing.T, _ *badBench) (string, string) {
		f, err := os.CreateTemp(filepath.Join(root, "examples"), "bad-input-*.yaml") // beside the examples, so ../bin resolves
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(f.Name()) })
		if _, err := f.WriteString(yaml); err != nil || f.Close() != nil {
			t.Fatalf("writing %s: %v", f.Name(), err)
		}
		file := f.Name()
		_, stderr, code := foresight(t, "check", "--config", file)
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		return "exit " + strconv.Itoa(code), lines[len(lines)-1]
	}
}

// api sends a request to the OpenAI listener.
func (b *badBench) api(t *testing.T, method, path, body string, headers ...string) (string, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+b.r.Addr()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return answer(t, req)
}

// admin sends a request to the admin listener with token ("" for none).
func (b *badBench) admin(t *testing.T, method, path, body, token string) (string, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+b.r.AdminAddr()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return answer(t, req)
}

// answer sends req and returns its status and error message: error.message of an OpenAI-shaped
// body, else the body itself.
func answer(t *testing.T, req *http.Request) (string, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return strconv.Itoa(resp.StatusCode), errorMessage(data)
}

// rawRequest writes a request on a connection of its own and reads the answer.
func rawRequest(t *testing.T, addr, request string) (string, string) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, request); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return strconv.Itoa(resp.StatusCode), errorMessage(data)
}

// errorMessage is error.message of an OpenAI-shaped error body, else the body.
func errorMessage(data []byte) string {
	var e struct{ Error struct{ Message string } }
	if json.Unmarshal(data, &e) == nil && e.Error.Message != "" {
		return e.Error.Message
	}
	return strings.TrimSpace(string(data))
}

// operationsSection returns the text of the section of docs/operations.md headed "## heading",
// up to the next such heading.
func operationsSection(t *testing.T, heading string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repo, "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "\n## "+heading+"\n")
	if !ok {
		t.Fatalf("docs/operations.md has no %q section", "## "+heading)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	return section
}

// docRow is one row of the bad-input table in docs/operations.md.
type docRow struct{ name, answer, message string }

// badInputRows reads the rows of the tables in the "Bad input" section of docs/operations.md:
// | Case | Sent | Answer | Message |, the message an excerpt in backticks where "…" stands for
// any text.
func badInputRows(t *testing.T) []docRow {
	t.Helper()
	section := operationsSection(t, "Bad input")
	code := regexp.MustCompile("`([^`]*)`")
	var rows []docRow
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if !strings.HasPrefix(line, "| ") || len(cells) != 4 || cells[0] == "Case" {
			continue
		}
		m := code.FindStringSubmatch(cells[3])
		if m == nil {
			t.Fatalf("docs/operations.md: bad-input row %q has no message in backticks", line)
		}
		rows = append(rows, docRow{name: cells[0], answer: cells[2], message: m[1]})
	}
	return rows
}

// matches reports whether message holds excerpt's pieces between its "…" in order.
func matches(message, excerpt string) bool {
	for _, piece := range strings.Split(excerpt, "…") {
		i := strings.Index(message, piece)
		if i < 0 {
			return false
		}
		message = message[i+len(piece):]
	}
	return true
}

// startBadBench starts the router the cases talk to.
func startBadBench(t *testing.T) *badBench {
	t.Helper()
	fleet, err := emulator.Start(1, 0, "llama-3.1-8b-h100-tp2", 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fleet.Close)
	const token, readToken = "e2e-admin-token-0123456789", "e2e-read-token-0123456789"
	dir := pluginDir(t)
	yaml := fmt.Sprintf(`plugins:
  - {name: scorer, type: latency-scorer, path: ../bin/plugins/scorer}
pipeline:
  scorers: [{pluginRef: scorer}]
server: {listen: "127.0.0.1:0", adminListen: "127.0.0.1:0", extProcListen: "127.0.0.1:0", adminToken: %s, readToken: %s,
  readBodyTimeout: 500ms, pluginDirs: [../bin/plugins, %q]}
endpoints:
  static: [{id: vllm-0, address: %q}]
objectives:
  - {name: batch, priority: -1}
`, token, readToken, dir, fleet.Addrs()[0])
	open := fmt.Sprintf(`plugins:
  - {name: queue, type: queue-scorer}
pipeline:
  scorers: [{pluginRef: queue}]
server: {listen: "127.0.0.1:0", adminListen: "127.0.0.1:0"}
endpoints:
  static: [{id: vllm-0, address: %q}]
`, fleet.Addrs()[0])
	b := &badBench{r: startFile(t, writeConfig(t, "bad-input-router.yaml", yaml)), token: token, readToken: readToken, dir: dir,
		open: startFile(t, writeConfig(t, "bad-input-open.yaml", open))}
	eventually.Wait(t, 10*time.Second, "the router's first answer", func() bool {
		code, _ := b.api(t, http.MethodPost, "/v1/chat/completions", chatWith(`,"max_tokens":1`))
		return code == "200"
	})
	return b
}

// TestBadInputTable sends every bad input of the table in docs/operations.md and checks the
// answer and message the table gives; the table and the cases must list the same inputs.
func TestBadInputTable(t *testing.T) {
	rows := badInputRows(t)
	var documented []string
	for _, r := range rows {
		documented = append(documented, r.name)
		if badInputs[r.name] == nil {
			t.Errorf("docs/operations.md lists the bad input %q, which TestBadInputTable does not send", r.name)
		}
	}
	for name := range badInputs {
		if !slices.Contains(documented, name) {
			t.Errorf("TestBadInputTable sends %q, which the bad-input table of docs/operations.md lacks", name)
		}
	}
	b := startBadBench(t)
	for _, r := range rows {
		send := badInputs[r.name]
		if send == nil {
			continue
		}
		t.Run(r.name, func(t *testing.T) {
			t.Parallel() // one case waits for a plugin's start timeout
			answer, message := send(t, b)
			if answer != r.answer || !matches(message, r.message) {
				t.Errorf("got %s %q; the table says %s `%s`", answer, message, r.answer, r.message)
			}
		})
	}
	// The router still serves after all of it.
	t.Cleanup(func() {
		if code, msg := b.api(t, http.MethodPost, "/v1/chat/completions", chatWith(`,"max_tokens":1`)); code != "200" {
			t.Errorf("after the bad inputs: %s %s", code, msg)
		}
	})
}
