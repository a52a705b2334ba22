import React from 'react';
import { ComboboxOption, InlineField, InlineFieldRow, InlineSwitch } from '@grafana/ui';

import { DataSource } from '../datasource';
import { TraceSummary } from '../types';
import { FieldsProps } from './SelectorFields';
import { Picker, TextField } from './fields';
import { matcherValue } from './selector';
import { requestErrors } from './validation';

const RECENT_TRACES = 20;

/** Span IDs as typed: separated by commas or spaces; none is unset. */
export const parseIds = (text: string): string[] | undefined => {
  const ids = text.split(/[\s,]+/).filter(Boolean);
  return ids.length ? ids : undefined;
};

interface TraceIdProps {
  value?: string;
  /** Whose slow traces the picker lists; none: the picker waits for one. */
  service?: string;
  tooltip: string;
  validate: (traceId: string) => string | undefined;
  onChange: (traceId: string | undefined) => void;
  datasource: DataSource;
  from?: number;
  to?: number;
}

/** A trace ID, typed or picked from the slowest recent traces of a service. */
export function TraceIdField({ value, service, tooltip, validate, onChange, datasource, from, to }: TraceIdProps) {
  return (
    <>
      <TextField
        label="Trace ID"
        value={value}
        width={36}
        placeholder="$trace_id"
        tooltip={tooltip}
        validate={validate}
        onCommit={(t) => onChange(t.trim() || undefined)}
      />
      <Picker
        label="Slow traces"
        placeholder={service ? `Slowest of ${service}` : 'Choose a service first'}
        tooltip="Recent traces of the selected service in the dashboard's range, slowest first"
        width={36}
        disabled={!service}
        load={async () =>
          traceOptions(service ? await datasource.getTraces({ service, limit: RECENT_TRACES }, from, to) : [])
        }
        onChange={onChange}
      />
    </>
  );
}

/** Narrowing a profile to one request: a trace ID (picked from slow traces or typed) or span IDs. */
export function RequestFields({ query, update, datasource, from, to }: FieldsProps) {
  const service = matcherValue(query.labelSelector ?? '', 'service_name');
  const spans = (query.spanSelector ?? []).join(', ');

  return (
    <InlineFieldRow>
      <TraceIdField
        value={query.traceId}
        service={service}
        tooltip="The whole request: every service's span profiles of this trace"
        validate={(t) => requestErrors(t, query.spanSelector).traceId}
        onChange={(traceId) => update({ traceId })}
        datasource={datasource}
        from={from}
        to={to}
      />
      <TextField
        label="Span IDs"
        value={spans}
        width={40}
        placeholder="comma-separated, 16 hex digits each"
        tooltip="Only the samples of these spans (the span attribute pyroscope.profile.id)"
        validate={(t) => requestErrors(query.traceId, parseIds(t)).spanSelector}
        onCommit={(t) => update({ spanSelector: parseIds(t) })}
      />
      <InlineField
        label="Per service"
        labelWidth="auto"
        disabled={!query.traceId}
        tooltip="With a trace ID: also one flame graph per service"
      >
        <InlineSwitch
          aria-label="Per service"
          value={Boolean(query.perService)}
          onChange={(e) => update({ perService: e.currentTarget.checked || undefined })}
        />
      </InlineField>
    </InlineFieldRow>
  );
}

function traceOptions(traces: TraceSummary[] | null): Array<ComboboxOption<string>> {
  return [...(traces ?? [])]
    .sort((a, b) => b.durationMs - a.durationMs)
    .map((t) => ({
      value: t.traceId,
      label: `${t.rootOperation} · ${formatDuration(t.durationMs)}`,
      description: `${t.traceId} · ${t.spans} spans · ${(t.services ?? []).join(', ')}`,
    }));
}

const formatDuration = (ms: number) => (ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${Math.round(ms)} ms`);
