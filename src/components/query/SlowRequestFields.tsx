import React from 'react';
import { InlineFieldRow } from '@grafana/ui';

import { SLOW_REQUESTS_PARTS } from '../../generated/vocabulary';
import { SlowRequestsPart } from '../../types';
import { withText } from './GpuFields';
import { FieldsProps } from './SelectorFields';
import { LABEL_WIDTH, MultiPicker, NumberField, Picker, TextField, stringOptions } from './fields';
import { SLOW_TRACES, durationError } from '../validation';

/** The halves of the answer as the picker shows them (pkg/models/trace_query.go). */
const PARTS = withText<SlowRequestsPart>(SLOW_REQUESTS_PARTS, {
  latency: { label: 'Latency', description: 'p50, p95 and p99 by endpoint, requests and goodput' },
  traces: { label: 'Slow traces', description: 'The slowest recent traces' },
});

const PART_LABELS = new Map<string, string>(PARTS.map((p) => [p.value, p.label]));

/** Latency by endpoint and the slowest traces, optionally of one service and endpoint. */
export function SlowRequestFields({ query, update, runQuery, datasource }: FieldsProps) {
  return (
    <>
      <InlineFieldRow>
        <Picker
          label="Service"
          labelWidth={LABEL_WIDTH}
          value={query.service}
          placeholder="All services"
          tooltip="A service of the trace store (Jaeger or Tempo)"
          width={20}
          clearable
          load={async () => stringOptions(await datasource.getTraceServices())}
          onChange={(service) => update({ service: service || undefined })}
        />
        <TextField
          label="Endpoint"
          labelWidth="auto"
          value={query.endpoint}
          width={20}
          placeholder="All endpoints"
          tooltip="The root span's operation, e.g. POST /generate"
          onCommit={(endpoint) => update({ endpoint: endpoint.trim() || undefined })}
        />
        <TextField
          label="Min duration"
          value={query.minDuration}
          width={10}
          labelWidth="auto"
          placeholder="any"
          tooltip="Only traces at least this long, e.g. 500ms, 1.5s; a plain number is milliseconds"
          validate={durationError}
          onCommit={(minDuration) => update({ minDuration: minDuration.trim() || undefined })}
        />
        <NumberField
          label="Limit"
          value={query.limit}
          placeholder={String(SLOW_TRACES.default)}
          tooltip={`How many of the slowest traces to list, at most ${SLOW_TRACES.max}`}
          width={8}
          onChange={(limit) => update({ limit }, false)}
          onBlur={runQuery}
        />
      </InlineFieldRow>
      <InlineFieldRow>
        <MultiPicker
          label="Parts"
          labelWidth={LABEL_WIDTH}
          value={query.parts}
          labelOf={(v) => PART_LABELS.get(v) ?? v}
          placeholder="Both"
          tooltip="The halves of the answer this panel shows, one frame each; the other is not asked. None chosen: both (a table then shows a frame picker)"
          load={async () => PARTS}
          onChange={(parts) => update({ parts: parts as SlowRequestsPart[] | undefined })}
        />
      </InlineFieldRow>
    </>
  );
}
