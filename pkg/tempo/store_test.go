package tempo_test

import (
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/tempo"
)

// Tempo answers every question the joins ask a trace store, as Jaeger does.
var _ correlate.TraceStore = (*tempo.Client)(nil)
