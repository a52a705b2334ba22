package tail

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/diagnose"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

var (
	t0     = time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	hourQ  = Query{ProfileTypeID: "cpu", From: t0, To: t0.Add(time.Hour)}
	spanOf = func(id string) models.Span { return models.Span{TraceID: id, SpanID: id + "-s", Duration: time.Second} }
)

func TestVerdictsDiagnoseARequestOnceAcrossQueries(t *testing.T) {
	v := NewVerdicts(time.Minute, 10)
	var made atomic.Int32
	diagnoseIt := func(context.Context) diagnose.TailRequest {
		made.Add(1)
		time.Sleep(20 * time.Millisecond)
		return diagnose.TailRequest{TraceID: "a", Causes: []diagnose.Cause{{Kind: "queue"}}}
	}
	var wg sync.WaitGroup
	for range 4 { // panels of one refresh, at once
		wg.Go(func() {
			if r := v.get(context.Background(), hourQ, spanOf("a"), diagnoseIt); r.TraceID != "a" {
				t.Errorf("%+v", r)
			}
		})
	}
	wg.Wait()
	v.get(context.Background(), hourQ, spanOf("a"), diagnoseIt) // a later panel
	if n := made.Load(); n != 1 {
		t.Errorf("diagnosed %d times, want once", n)
	}
	// Another range (the next refresh) or another profile type is another verdict.
	other := hourQ
	other.To = other.To.Add(time.Second)
	v.get(context.Background(), other, spanOf("a"), diagnoseIt)
	other.ProfileTypeID = "wall"
	v.get(context.Background(), other, spanOf("a"), diagnoseIt)
	if n := made.Load(); n != 3 {
		t.Errorf("another range and another profile type: diagnosed %d times in all, want 3", n)
	}
}

func TestVerdictsKeepNeitherFailuresNorMoreThanTheirBound(t *testing.T) {
	v := NewVerdicts(time.Minute, 3)
	failed := func(context.Context) diagnose.TailRequest {
		return diagnose.TailRequest{TraceID: "x", Why: "its trace could not be read"}
	}
	v.get(context.Background(), hourQ, spanOf("x"), failed)
	if v.Len() != 0 {
		t.Error("a request without a verdict was kept: a trace not yet flushed would stay unread")
	}
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		v.get(context.Background(), hourQ, spanOf(id), func(context.Context) diagnose.TailRequest {
			return diagnose.TailRequest{TraceID: id, Causes: []diagnose.Cause{{Kind: "cpu"}}}
		})
	}
	if v.Len() != 3 {
		t.Errorf("%d kept, want the bound 3", v.Len())
	}
	if _, ok := v.lookup(fmt.Sprintf("a|a-s|cpu|%d|%d", hourQ.From.UnixNano(), hourQ.To.UnixNano())); ok {
		t.Error("the oldest verdict outlived the bound")
	}
	short := NewVerdicts(time.Millisecond, 10)
	var made atomic.Int32
	mk := func(context.Context) diagnose.TailRequest {
		made.Add(1)
		return diagnose.TailRequest{TraceID: "a", Causes: []diagnose.Cause{{Kind: "cpu"}}}
	}
	short.get(context.Background(), hourQ, spanOf("a"), mk)
	time.Sleep(5 * time.Millisecond)
	short.get(context.Background(), hourQ, spanOf("a"), mk)
	if made.Load() != 2 {
		t.Error("an expired verdict was reused")
	}
	var none *Verdicts
	if r := none.get(context.Background(), hourQ, spanOf("a"), mk); r.TraceID != "a" {
		t.Error("a nil Verdicts did not diagnose")
	}
}
