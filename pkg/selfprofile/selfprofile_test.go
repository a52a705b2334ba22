package selfprofile

import (
	"context"
	"runtime/pprof"
	"testing"
)

func TestDoLabelsSamplesWithTheQueryTypeOnlyWhenRunning(t *testing.T) {
	label := func() (string, bool) {
		var v string
		var ok bool
		Do(context.Background(), "profile", func(ctx context.Context) { v, ok = pprof.Label(ctx, "query_type") })
		return v, ok
	}
	if _, ok := label(); ok {
		t.Error("labelled although self-profiling is off")
	}
	running.Store(true)
	defer running.Store(false)
	if v, ok := label(); !ok || v != "profile" {
		t.Errorf("query_type label = %q, %v", v, ok)
	}
}
