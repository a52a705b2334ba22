package jaeger

// DefaultTraceLimit is how many traces a search returns unless asked otherwise.
const DefaultTraceLimit = 20
