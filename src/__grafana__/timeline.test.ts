import { DataFrame, DataFrameView, FieldType, TraceKeyValuePair, TraceSpanRow } from '@grafana/data';

import { AnswerName } from './answers';
import { readFixture } from './fixtures';
import { toFrames } from './frames';

// Grafana's trace view (Explore's TraceView, the Traces panel) is app code, not on npm: what it
// reads of an answer is the first frame whose meta.preferredVisualisationType is "trace", through
// @grafana/data's DataFrameView<TraceSpanRow> (its transformTraceDataFrame). From each row it
// makes a span whose references are [CHILD_OF parentSpanID, then FOLLOWS_FROM each of
// `references`], and nests a span under its first reference: a span with references but no
// parent would hang under the span it references. Here the plugin's answers go through
// @grafana/runtime's toDataQueryResponse and DataFrameView<TraceSpanRow>, and the spans are
// checked as that model will use them.

interface Span extends TraceSpanRow {
  tag: Record<string, unknown>;
}

function traceSpans(name: AnswerName) {
  const fixture = readFixture(name);
  const frames = toFrames(fixture);
  const traces = frames.filter((f: DataFrame) => f.meta?.preferredVisualisationType === 'trace');
  expect(traces.map((f) => f.name)).toEqual(['timeline']);
  const frame = traces[0];
  const byName = Object.fromEntries(frame.fields.map((f) => [f.name, f.type]));
  // The fields Grafana's TraceSpanRow names, with the types its trace view expects.
  expect(byName).toMatchObject({
    traceID: FieldType.string,
    spanID: FieldType.string,
    parentSpanID: FieldType.string,
    operationName: FieldType.string,
    serviceName: FieldType.string,
    serviceTags: FieldType.other,
    startTime: FieldType.number,
    duration: FieldType.number,
    tags: FieldType.other,
    references: FieldType.other,
    warnings: FieldType.other,
  });
  const view = new DataFrameView<TraceSpanRow>(frame);
  const spans: Span[] = view.toArray().map((row) => ({
    ...row,
    tag: Object.fromEntries((row.tags ?? []).map((t: TraceKeyValuePair) => [t.key, t.value])),
  }));
  return { fixture, frame, spans };
}

function index(spans: Span[]) {
  return new Map(spans.map((s) => [s.spanID, s]));
}

const count = (spans: Span[], category: string) => spans.filter((s) => s.tag.category === category).length;

/** What holds for any timeline the trace view is given. */
function checkTrace(spans: Span[]) {
  const byID = index(spans);
  expect(byID.size).toBe(spans.length);
  const traceID = spans[0].traceID;
  for (const s of spans) {
    expect(s.traceID).toBe(traceID);
    // The trace view drops spans whose start is 0 and works in µs: startTime × 1000.
    expect(s.startTime).toBeGreaterThan(0);
    expect(s.duration).toBeGreaterThanOrEqual(0);
    expect(Array.isArray(s.serviceTags)).toBe(true);
    if (s.parentSpanID) {
      const parent = byID.get(s.parentSpanID)!;
      expect(parent).toBeDefined();
      // A parent holds its child (to Grafana's microseconds).
      expect(Math.round(parent.startTime * 1000)).toBeLessThanOrEqual(Math.round(s.startTime * 1000));
      expect(Math.round((parent.startTime + parent.duration) * 1000)).toBeGreaterThanOrEqual(
        Math.round((s.startTime + s.duration) * 1000)
      );
    }
    for (const r of s.references ?? []) {
      expect(r.traceID).toBe(traceID);
      expect(byID.get(r.spanID)).toBeDefined();
      expect(s.parentSpanID).toBeTruthy();
    }
  }
  return byID;
}

describe("the kernels timeline, as Grafana's trace view reads it", () => {
  it("is the request's trace: a span per activity of the generated trace, kernels linked to their launches", () => {
    const { fixture, spans } = traceSpans('kernelTimeline');
    const byID = checkTrace(spans);
    const truth = fixture.truth!;
    expect(spans[0].traceID).toBe(fixture.traceId);
    expect(count(spans, 'kernel')).toBe(truth.kernels);
    expect(count(spans, 'gpu_memcpy') + count(spans, 'gpu_memset')).toBe(truth.transfers);
    expect(count(spans, 'cuda_sync')).toBe(truth.syncCalls);

    // One root, the file; under it the host thread and the stream (and the device's own sync
    // records), the services Grafana colours and lists.
    const roots = spans.filter((s) => !s.parentSpanID);
    expect(roots.map((s) => [s.serviceName, s.operationName])).toEqual([
      ['GPU kernel trace', `infer_${fixture.traceId}.pt.trace.json`],
    ]);
    const services = spans.filter((s) => s.parentSpanID === roots[0].spanID).map((s) => s.serviceName);
    expect(services).toContain('python3.10 thread 1234');
    expect(services).toContain('GPU 0 stream 7');
    expect(new Set(spans.map((s) => s.serviceName))).toEqual(new Set([roots[0].serviceName, ...services]));

    // Every GPU activity links to its call, a host call of the same correlation; each launch
    // call is referenced by exactly its work.
    const referenced = new Map<string, number>();
    for (const s of spans.filter((x) =>
      ['kernel', 'gpu_memcpy', 'gpu_memset', 'cuda_sync'].includes(String(x.tag.category))
    )) {
      expect(s.references).toHaveLength(1);
      const call = byID.get(s.references![0].spanID)!;
      expect(call.tag.category).toBe('cuda_runtime');
      expect(call.tag.correlation).toBe(s.tag.correlation);
      expect(call.serviceName).toBe('python3.10 thread 1234');
      expect(s.references![0].tags).toEqual(
        expect.arrayContaining([
          { key: 'link', value: s.tag.category === 'cuda_sync' ? 'synchronising call' : 'launch' },
        ])
      );
      if (s.tag.category !== 'cuda_sync') {
        referenced.set(call.spanID, (referenced.get(call.spanID) ?? 0) + 1);
      }
    }
    expect(referenced.size).toBe(truth.launches);
    expect([...referenced.values()].every((n) => n === 1)).toBe(true);

    // The request's annotations hold the calls and the kernels: nesting by time.
    const annotation = spans.find((s) => s.tag.category === 'user_annotation')!;
    const gpuAnnotation = spans.find((s) => s.tag.category === 'gpu_user_annotation')!;
    expect(annotation.tag['trace ID']).toBe(fixture.traceId);
    for (const s of spans) {
      if (s.tag.category === 'cuda_runtime') {
        expect(s.parentSpanID).toBe(annotation.spanID);
      }
      if (s.tag.category === 'kernel' || s.tag.category === 'gpu_memcpy') {
        expect(s.parentSpanID).toBe(gpuAnnotation.spanID);
        expect(s.tag).toMatchObject({ device: 0, stream: 7 });
      }
    }
    // 2025-06-01T12:00:00.123456789Z: the annotation's start, to the trace view's microsecond.
    expect(Math.round(annotation.startTime * 1000)).toBe(1748779200123457);
    expect(spans.some((s) => s.tag.category === 'kernel' && s.tag.grid === '66×1×1' && s.tag.block === '128×1×1')).toBe(
      true
    );
  });

  it("shows a real trace's first 10,000 activities and says the rest were left out", () => {
    const { frame, spans } = traceSpans('kernelTimelineResNet');
    checkTrace(spans);
    const root = spans.filter((s) => !s.parentSpanID);
    expect(root).toHaveLength(1);
    expect(root[0].warnings).toEqual([
      '11019 activities left out: the timeline holds the first 10000 of this file (its cap)',
    ]);
    expect(root[0].tag).toMatchObject({ activities: 10000, 'left out': 11019, cap: 10000 });
    const activities = spans.filter(
      (s) => !['trace file', 'host thread', 'GPU stream'].includes(String(s.tag.category))
    );
    expect(activities).toHaveLength(10000);
    const notices = (frame.meta?.notices ?? []).map((n) => n.text).join('\n');
    expect(notices).toContain('its cap of 10000 activities per file');
    // Every kernel whose launch call is among them links to it.
    const byID = index(spans);
    const calls = new Map(
      spans.filter((s) => s.tag.category === 'cuda_runtime').map((s) => [s.tag.correlation, s.spanID])
    );
    for (const k of spans.filter((s) => s.tag.category === 'kernel')) {
      const call = calls.get(k.tag.correlation);
      expect(k.references?.map((r) => r.spanID)).toEqual(call ? [call] : undefined);
      expect(byID.get(k.parentSpanID!)).toBeDefined();
    }
  });
});
