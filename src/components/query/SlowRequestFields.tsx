import React from 'react';
import { InlineFieldRow } from '@grafana/ui';

import { FieldsProps } from './SelectorFields';
import { LABEL_WIDTH, NumberField, Picker, TextField, stringOptions } from './fields';
import { SLOW_TRACES, durationError } from '../validation';

/** Latency by endpoint and the slowest traces, optionally of one service and endpoint. */
export function SlowRequestFields({ query, update, runQuery, datasource }: FieldsProps) {
  return (
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
  );
}
