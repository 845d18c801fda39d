package share

import (
	"fmt"
	"hash/fnv"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// The NATS exchange's names: its subject prefix, its server URLs, its stream and bucket.

var prefixPattern = regexp.MustCompile(`^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$`)

// CheckPrefix returns an error unless p can begin the exchange's subjects.
func CheckPrefix(p string) error {
	if len(p) > 200 || !prefixPattern.MatchString(p) { // the stream and bucket names stay under 256 bytes
		return fmt.Errorf("%q is not a subject prefix: 1–200 characters, tokens of letters, digits, '_' or '-' separated by single dots", p)
	}
	return nil
}

// CheckNATSURL returns an error unless s is a NATS URL or a comma-separated list of them: a
// scheme of nats, tls, ws or wss and a host (nats://host:port). The error never repeats a
// password the URL holds.
func CheckNATSURL(s string) error {
	for i, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		u, err := url.Parse(part)
		switch {
		case part == "":
			return fmt.Errorf("server %d of the list is empty; want nats://host:port", i+1)
		case err != nil:
			return fmt.Errorf("server %d of the list is not a URL; want nats://host:port", i+1)
		case !slices.Contains([]string{"nats", "tls", "ws", "wss"}, u.Scheme):
			return fmt.Errorf("%s: the scheme must be nats, tls, ws or wss (nats://host:port)", u.Redacted())
		case u.Hostname() == "":
			return fmt.Errorf("%s: no host (nats://host:port)", u.Redacted())
		}
	}
	return nil
}

// RedactURL returns a server list for logs: passwords masked.
func RedactURL(s string) string {
	parts := strings.Split(s, ",")
	for i, part := range parts {
		if u, err := url.Parse(strings.TrimSpace(part)); err == nil {
			parts[i] = u.Redacted()
		} else {
			parts[i] = "(not a URL)"
		}
	}
	return strings.Join(parts, ",")
}

// NATSNames returns the names of the samples stream and the models bucket of a subject prefix:
// the prefix with every character but letters, digits, '_' and '-' replaced by '_' (a stream
// or bucket name holds no '.', '*', '>' or space), and then, when any was, a hash of the prefix
// so that two prefixes never share them.
func NATSNames(prefix string) (stream, bucket string) {
	name := []byte(prefix)
	changed := false
	for i, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			name[i], changed = '_', true
		}
	}
	base := string(name)
	if changed {
		h := fnv.New32a()
		h.Write([]byte(prefix))
		base = fmt.Sprintf("%s_%08x", base, h.Sum32())
	}
	return base + "_producer_samples", base + "_producer_models"
}
