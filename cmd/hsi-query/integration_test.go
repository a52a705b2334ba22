//go:build integration

package main

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/gpusim"
	"github.com/hsi-profiling/hsi-profiling-datasource/internal/testbed"
)

var bed testbed.Endpoints

func TestMain(m *testing.M) { os.Exit(testbed.MainForTests(m, &bed)) }

// Against the bed's Prometheus: the recorded GPUs begin at the fixtures' start, the live
// simulator's after it, and a selector matching nothing has no first sample.
func TestEarliestSampleOfTheBedsGPUs(t *testing.T) {
	e := bed
	if e.FixtureStart.IsZero() {
		t.Fatal("the test bed has no GPU fixtures (HSI_TESTBED_FIXTURE_START)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	now := time.Now()
	window := now.Sub(e.FixtureStart) + time.Minute
	first, err := earliestSample(ctx, e.PrometheusURL, `DCGM_FI_DEV_GPU_UTIL{job="`+testbed.GPUJob+`",Hostname="`+gpusim.FixtureHostA+`"}`, now, window)
	if err != nil {
		t.Fatal(err)
	}
	if !first.Equal(e.FixtureStart) {
		t.Errorf("fixture GPUs begin at %s, want the fixtures' start %s", first, e.FixtureStart)
	}
	live, err := earliestSample(ctx, e.PrometheusURL, `DCGM_FI_DEV_GPU_UTIL{Hostname="`+testbed.GPUSimHost+`",simulated="true"}`, now, window)
	if err != nil {
		t.Fatal(err)
	}
	if live.IsZero() || live.Before(e.FixtureEnd) || live.After(now) {
		t.Errorf("the live simulator begins at %s, want between the fixtures' end %s and now", live, e.FixtureEnd)
	}
	none, err := earliestSample(ctx, e.PrometheusURL, `DCGM_FI_DEV_GPU_UTIL{Hostname="no-such-host"}`, now, window)
	if err != nil || !none.IsZero() {
		t.Errorf("no series: %s %v", none, err)
	}
}
