import type { BackendDataSourceResponse } from '@grafana/runtime';

/** The answers test/frames writes: each one a query and what the plugin binary answered. */
export const ANSWERS = [
  'service',
  'span',
  'request',
  'diff',
  'empty',
  'trace',
  // The Request-Level dashboard's panels on the same request: each asks for its own part.
  'traceVerdict',
  'traceBreakdown',
  'traceSpans',
  'spanHeatmap',
  'spanProfile',
  // The overview dashboard's "Why is it slow now?" row: the demo endpoint's tail, a frame a panel.
  'tailSummary',
  'tailCauses',
  'tailRequests',
  // The GPU incident dashboard's: fixture-node-d's failures, and gpu-node-1's with a CUDA OOM request.
  'triage',
  'triageDemo',
  'triageRequests',
  'triageSignals',
  // The kernels query's timeline view: a generated request's trace (its truth beside it) and
  // the real ResNet-50 trace at the default cap.
  'kernelTimeline',
  'kernelTimelineResNet',
] as const;
export type AnswerName = (typeof ANSWERS)[number];

export interface Fixture {
  query: Record<string, unknown>;
  from: number;
  to: number;
  traceId?: string;
  spanId?: string;
  /** The services of the request's profiled spans, as Jaeger lists them: the flame graph's. */
  profiledServices?: string[];
  /** What the trace the answer read holds, as its generator counted it (kernelTimeline). */
  truth?: { kernels: number; transfers: number; launches: number; syncCalls: number };
  /** The answer as Grafana's server sends it to the frontend (/api/ds/query). */
  response: BackendDataSourceResponse;
}
