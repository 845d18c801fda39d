package sdk

import (
	"strings"
	"testing"
)

func TestGRPCServerRejectsWrongStage(t *testing.T) {
	type onlyPlugin struct{ Plugin }
	p := &grpcServer{stage: StageFilter, reg: singleInstance(onlyPlugin{&echoStageNoStages{}})}
	if err := p.GRPCServer(nil, nil); err == nil || !strings.Contains(err.Error(), "does not implement stage filter") {
		t.Errorf("got %v", err)
	}
}

type echoStageNoStages struct{}

func (echoStageNoStages) Type() string           { return "nothing" }
func (echoStageNoStages) Description() string    { return "" }
func (echoStageNoStages) Configure([]byte) error { return nil }
