package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/stateplane"
)

func TestParseState(t *testing.T) {
	t.Setenv("POD_NAME", "router-0")
	c, err := config.Parse("test.yaml", []byte(twoProfiles+y("state: {nats: {embedded: {}}}")))
	if err != nil {
		t.Fatal(err)
	}
	s := c.State
	if s.Replica != "router-0" || s.Prefix != stateplane.DefaultPrefix || *s.PublishInterval != stateplane.DefaultPublishInterval ||
		s.SnapshotInterval != stateplane.DefaultSnapshotInterval || s.PeerTimeout != stateplane.DefaultPeerTimeout ||
		s.NATS.Embedded.Listen != config.DefaultStateListen {
		t.Errorf("defaults %+v, embedded %+v", *s, *s.NATS.Embedded)
	}
	c, err = config.Parse("test.yaml", []byte(twoProfiles+y("state: {nats: {url: 'nats://a:4222,nats://b:4222'}, replica: r1, publishInterval: 0s, prefix: pool.a}")))
	if err != nil {
		t.Fatal(err)
	}
	if pc := c.State.PlaneConfig(); pc.Replica != "r1" || pc.PublishInterval != 0 || pc.Prefix != "pool.a" {
		t.Errorf("plane config %+v", pc)
	}
	if c.State.PeerTimeout != 3*time.Second {
		t.Errorf("peer timeout %s", c.State.PeerTimeout)
	}
}

func TestParseStateErrors(t *testing.T) {
	t.Setenv("POD_NAME", "")
	t.Setenv("HOSTNAME", "")
	for _, tc := range []struct{ section, want string }{
		{"state: {replica: r}", `test.yaml:21: state.nats: give url (a NATS cluster) or embedded`},
		{"state: {replica: r, nats: {url: 'nats://a:1', embedded: {}}}", `state.nats: give url or embedded, not both`},
		{"state: {replica: r, nats: {url: 'http://a:1'}}", `state.nats.url: "http://a:1" is not a NATS URL`},
		{"state: {replica: r, nats: {embedded: {listen: nowhere}}}", `state.nats.embedded.listen: "nowhere" is not host:port`},
		{"state: {nats: {embedded: {}}}", `state.replica: empty, and neither $POD_NAME nor $HOSTNAME is set`},
		{"state: {replica: a.b, nats: {embedded: {}}}", `state.replica: "a.b" is not a replica ID`},
		{"state: {replica: r, prefix: 'a..b', nats: {embedded: {}}}", `state.prefix: "a..b" is not a subject prefix`},
		{"state: {replica: r, publishInterval: 2s, nats: {embedded: {}}}", `state.publishInterval: 2s is out of range`},
		{"state: {replica: r, snapshotInterval: 1ms, nats: {embedded: {}}}", `state.snapshotInterval: 1ms is below 10ms`},
		{"state: {replica: r, snapshotInterval: 1s, peerTimeout: 1s, nats: {embedded: {}}}", `state.peerTimeout: 1s is less than two snapshot intervals`},
	} {
		_, err := config.Parse("test.yaml", []byte(twoProfiles+tc.section))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.section, err, tc.want)
		}
	}
}
