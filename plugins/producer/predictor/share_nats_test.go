package predictor

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/foresight-router/foresight/plugins/producer/internal/share"
	"github.com/foresight-router/foresight/plugins/producer/internal/share/natstest"
	"github.com/foresight-router/foresight/plugins/sdk"
)

// TestMain keeps the router's environment out of the tests: with $FORESIGHT_NATS_URL set, every
// producer of the tests would share through that server (shareNATS defaults to "host").
func TestMain(m *testing.M) {
	for _, v := range []string{NATSURLEnv, NATSPrefixEnv, ReplicaIDEnv} {
		_ = os.Unsetenv(v)
	}
	os.Exit(m.Run())
}

// natsParams returns the parameters of a replica of the tests sharing through url.
func natsParams(url, id string, extra map[string]any) map[string]any {
	params := map[string]any{"trainInline": true, "shareNATS": url, "replicaID": id, "sharePeriodMs": 1000}
	for k, v := range extra {
		params[k] = v
	}
	return params
}

// closeShare closes p's exchanger at the test's end (a producer has no Close: its process ends).
func closeShare(t *testing.T, p *Producer) {
	t.Cleanup(func() {
		p.WaitIdle()
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.share != nil {
			_ = p.share.ex.Close()
		}
	})
}

// TestReplicasLearnAsOneThroughNATS: two replicas fed alternate requests, sharing through NATS,
// hold every sample of both and train on the same rows as one producer fed everything.
func TestReplicasLearnAsOneThroughNATS(t *testing.T) {
	srv := natstest.Start(t)
	cycles := testCycles(200)
	end := t0.Add(time.Minute)
	one := New()
	configure(t, one, map[string]any{"trainInline": true})
	a, b := New(), New()
	configure(t, a, natsParams(srv.URL, "a", nil))
	configure(t, b, natsParams(srv.URL, "b", nil))
	closeShare(t, a)
	closeShare(t, b)
	if _, ok := a.share.ex.(*share.NATSExchanger); !ok {
		t.Fatalf("replica a shares through %T", a.share.ex)
	}
	for _, batch := range workload(1) {
		observe(t, one, batch)
		var ha, hb []sdk.Sample
		for i := range batch {
			if i%2 == 0 {
				ha = append(ha, batch[i])
			} else {
				hb = append(hb, batch[i])
			}
		}
		observe(t, a, ha)
		observe(t, b, hb)
	}
	advance(t, one, end)
	observe(t, one, nil)
	for _, r := range []*Producer{a, b, a} {
		advance(t, r, end)
		observe(t, r, nil)
	}
	oneTTFT, _ := mape(t, one, cycles)
	for _, r := range []*Producer{a, b} {
		ttft, _ := mape(t, r, cycles)
		rows := r.Stats().TrainingRows
		t.Logf("replica %s: TTFT MAPE %.4f (one producer %.4f), %d rows, %d samples held", r.Params().ReplicaID, ttft, oneTTFT, rows, r.store.Len())
		if r.store.Len() != one.store.Len() || rows != one.Stats().TrainingRows {
			t.Errorf("replica %s holds %d samples and trained on %d rows; one producer %d and %d",
				r.Params().ReplicaID, r.store.Len(), rows, one.store.Len(), one.Stats().TrainingRows)
		}
		if ttft > 1.25*oneTTFT+0.005 {
			t.Errorf("replica %s: TTFT MAPE %.4f, one producer %.4f", r.Params().ReplicaID, ttft, oneTTFT)
		}
	}
}

// TestNATSReplicasThatStart: a new replica serves, from its first cycle, the models another
// published in the bucket, with that replica's samples in its store; a replica restarted under
// its ID takes back its own samples and models.
func TestNATSReplicasThatStart(t *testing.T) {
	srv := natstest.Start(t)
	a, _ := trainedProducer(t, natsParams(srv.URL, "a", nil))
	closeShare(t, a)
	published := a.share.published
	if published == 0 {
		t.Fatal("replica a published no models")
	}
	data, err := share.EncodeSet(a.share.own)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("a model set of the default size: %d bytes in the bucket (%d rows)", len(data), a.share.own.Meta.TrainingRows)
	quiet := map[string]any{"minNewSamples": 1_000_000, "youngRows": 0}
	b := New()
	configure(t, b, natsParams(srv.URL, "b", quiet))
	closeShare(t, b)
	if v := b.Stats().ModelVersion; v != published {
		t.Errorf("the new replica serves version %d, want a's published %d", v, published)
	}
	if b.store.Len() != a.store.Len() || b.store.Len() == 0 {
		t.Errorf("the new replica's store holds %d samples, replica a's %d", b.store.Len(), a.store.Len())
	}
	restarted := New()
	configure(t, restarted, natsParams(srv.URL, "a", quiet))
	closeShare(t, restarted)
	if restarted.store.Len() != a.store.Len() {
		t.Errorf("the restarted replica took back %d samples, want %d", restarted.store.Len(), a.store.Len())
	}
	if v := restarted.Stats().ModelVersion; v != published {
		t.Errorf("the restarted replica serves version %d, want its own published %d", v, published)
	}
}

// TestNATSDownAtTheProducer: with the server down the producer learns and serves alone and
// keeps its rows; once the server is back they are published, none lost, none twice.
func TestNATSDownAtTheProducer(t *testing.T) {
	srv := natstest.Start(t)
	a, b := New(), New()
	configure(t, a, natsParams(srv.URL, "a", nil))
	configure(t, b, natsParams(srv.URL, "b", nil))
	closeShare(t, a)
	closeShare(t, b)
	work := workload(6)
	observe(t, a, work[0])
	srv.Stop()
	for _, batch := range work[1:4] {
		observe(t, a, batch)
	}
	if n, f := len(a.share.pending), a.share.ex.Failures(); n != 300 || f != 3 {
		t.Fatalf("%d samples waiting, %d failed exchanges; want 300 and 3", n, f)
	}
	srv.Restart()
	next := 4
	for deadline := time.Now().Add(15 * time.Second); len(a.share.pending) != 0; next++ {
		if time.Now().After(deadline) || next == len(work) {
			t.Fatalf("%d samples still waiting after the restart", len(a.share.pending))
		}
		time.Sleep(200 * time.Millisecond) // the client reconnects by itself
		observe(t, a, work[next])
	}
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		advance(t, b, t0.Add(time.Duration(next)*time.Second+time.Hour))
		observe(t, b, nil)
		if b.share.ex.Failures() == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("replica b did not reconnect")
		}
	}
	if b.store.Len() != a.store.Len() {
		t.Errorf("replica b holds %d samples, replica a %d: rows were lost or merged twice", b.store.Len(), a.store.Len())
	}
}

func TestShareNATSParameters(t *testing.T) {
	srv := natstest.Start(t)
	t.Setenv("POD_NAME", "router-7d9f-x2v")
	p := New()
	closeShare(t, p)
	configure(t, p, map[string]any{})
	if p.share != nil {
		t.Fatal(`sharing is on with shareNATS "host" and no state plane`)
	}
	t.Setenv(NATSURLEnv, srv.URL)
	t.Setenv(NATSPrefixEnv, "team.prod")
	t.Setenv(ReplicaIDEnv, "router-0")
	configure(t, p, map[string]any{})
	ex, ok := p.share.ex.(*share.NATSExchanger)
	if !ok || ex.Config().URL != srv.URL || ex.Config().Prefix != "team.prod" || p.Params().ReplicaID != "router-0" {
		t.Fatalf("sharing through %T %+v as %q; want the state plane's, as $%s", p.share.ex, ex.Config(), p.Params().ReplicaID, ReplicaIDEnv)
	}
	configure(t, p, map[string]any{"shareDir": t.TempDir()})
	if _, ok := p.share.ex.(*share.Exchanger); !ok {
		t.Errorf("shareDir with the default shareNATS shares through %T, want the directory", p.share.ex)
	}
	configure(t, p, map[string]any{"shareNATS": ""})
	if p.share != nil {
		t.Error(`sharing still on with shareNATS ""`)
	}
	dir := t.TempDir()
	for _, tt := range []struct {
		params map[string]any
		env    map[string]string
		says   string
	}{
		{map[string]any{"shareNATS": "http://x:4222"}, nil, `"shareNATS"`},
		{map[string]any{"shareNATS": "localhost:4222"}, nil, `"shareNATS"`},
		{map[string]any{"shareNATS": "nats://u:secret@:4222"}, nil, `"shareNATS"`},
		{map[string]any{"shareNATS": srv.URL, "shareDir": dir}, nil, `"shareDir" and "shareNATS"`},
		{map[string]any{"shareNATS": "host", "shareDir": dir}, nil, `"shareDir" and "shareNATS"`},
		{map[string]any{}, map[string]string{NATSURLEnv: "localhost"}, "$" + NATSURLEnv},
		{map[string]any{}, map[string]string{NATSPrefixEnv: "a b"}, "$" + NATSPrefixEnv},
		{map[string]any{}, map[string]string{ReplicaIDEnv: "a/b"}, `"replicaID": from $` + ReplicaIDEnv},
		{map[string]any{}, map[string]string{ReplicaIDEnv: "", "POD_NAME": "", "HOSTNAME": ""}, `"replicaID": empty`},
	} {
		for k, v := range tt.env {
			t.Setenv(k, v)
		}
		raw, _ := json.Marshal(tt.params)
		if err := New().Configure(raw); err == nil || !strings.Contains(err.Error(), tt.says) || strings.Contains(err.Error(), "secret") {
			t.Errorf("Configure(%s) with %v: %v; want an error naming %s", raw, tt.env, err, tt.says)
		}
		t.Setenv(NATSURLEnv, srv.URL)
		t.Setenv(NATSPrefixEnv, "team.prod")
		t.Setenv(ReplicaIDEnv, "router-0")
	}
}
