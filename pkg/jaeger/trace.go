package jaeger

import "github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"

// DefaultTraceLimit is how many traces a search returns unless asked otherwise.
const DefaultTraceLimit = models.DefaultTraceLimit
