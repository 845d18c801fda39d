package report

import (
	"os"
	"testing"
	"time"
)

func TestZZSample(t *testing.T) {
	in := Input{Title: "sample", Strategies: []Strategy{
		strategy("rr", synthetic(3000, 40*time.Millisecond, 0, false)),
		strategy("predicted-latency", synthetic(3000, 2*time.Millisecond, 7, true)),
		{Name: "oracle", Unavailable: "not yet"},
	}}
	f, _ := os.Create("/tmp/sample.html")
	defer f.Close()
	Write(f, in)
}
