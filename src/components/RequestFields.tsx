import React from 'react';
import { ComboboxOption, InlineField, InlineFieldRow, InlineSwitch } from '@grafana/ui';

import { DataSource } from '../datasource';
import { HsiQuery, TraceSummary } from '../types';
import { FieldsProps } from './SelectorFields';
import { LABEL_WIDTH, NumberField, OptionsRow, Picker, TextField, count } from './fields';
import { matcherValue } from './selector';
import { requestErrors } from './validation';

const RECENT_TRACES = 20;

/** What the flame graph keeps when maxNodes is unset (the backend's default). */
export const DEFAULT_MAX_NODES = 16384;

/** Span IDs as typed: separated by commas or spaces; none is unset. */
export const parseIds = (text: string): string[] | undefined => {
  const ids = text.split(/[\s,]+/).filter(Boolean);
  return ids.length ? ids : undefined;
};

/** The options row's words for which requests a profile covers: one trace, some spans, or all. */
export function requestSummary(traceId?: string, spanIds?: string[], perService?: boolean): string {
  if (traceId?.trim()) {
    return `trace ${traceId.trim()}${perService ? ', per service' : ''}`;
  }
  if (spanIds?.length) {
    return count(spanIds.length, 'span');
  }
  return 'all requests';
}

const capitalised = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

export const maxNodesSummary = (maxNodes?: number) => `Max nodes ${maxNodes || DEFAULT_MAX_NODES}`;

interface TraceIdProps {
  value?: string;
  tooltip: string;
  validate: (traceId: string) => string | undefined;
  onChange: (traceId: string | undefined) => void;
}

/** A trace ID as typed: $trace_id, or 16 or 32 hex digits. */
export function TraceIdField({ value, tooltip, validate, onChange }: TraceIdProps) {
  return (
    <TextField
      label="Trace ID"
      labelWidth={LABEL_WIDTH}
      value={value}
      width={36}
      placeholder="$trace_id"
      tooltip={tooltip}
      validate={validate}
      onCommit={(t) => onChange(t.trim() || undefined)}
    />
  );
}

interface SlowTracesProps {
  /** Whose slow traces the picker lists; none: the picker waits for one. */
  service?: string;
  onChange: (traceId: string) => void;
  datasource: DataSource;
  from?: number;
  to?: number;
  width: number;
}

/** The slowest recent traces of a service; picking one sets the trace ID. */
export function SlowTracesPicker({ service, onChange, datasource, from, to, width }: SlowTracesProps) {
  return (
    <Picker
      label="Slow traces"
      placeholder={service ? 'Slowest first' : 'Choose a service first'}
      tooltip="Recent traces of the selected service in the dashboard's range, slowest first"
      width={width}
      disabled={!service}
      load={async () =>
        traceOptions(service ? await datasource.getTraces({ service, limit: RECENT_TRACES }, from, to) : [])
      }
      onChange={onChange}
    />
  );
}

/**
 * The profile's options: narrowing it to one request (a trace ID, picked from slow traces or
 * typed, or span IDs), one flame graph per service, and the flame graph's size.
 */
export function RequestFields({ query, update, runQuery, datasource, from, to }: FieldsProps) {
  const service = matcherValue(query.labelSelector ?? '', 'service_name');
  const spans = (query.spanSelector ?? []).join(', ');
  const errors = requestErrors(query.traceId, query.spanSelector);

  return (
    <OptionsRow
      summary={[
        capitalised(requestSummary(query.traceId, query.spanSelector, query.perService)),
        maxNodesSummary(query.maxNodes),
      ]}
      startOpen={Boolean(errors.traceId || errors.spanSelector)}
    >
      <InlineFieldRow>
        <TraceIdField
          value={query.traceId}
          tooltip="The whole request: every service's span profiles of this trace"
          validate={(t) => requestErrors(t, query.spanSelector).traceId}
          onChange={(traceId) => update({ traceId })}
        />
        <SlowTracesPicker
          service={service}
          onChange={(traceId) => update({ traceId: traceId || undefined })}
          datasource={datasource}
          from={from}
          to={to}
          width={26}
        />
        <InlineField
          label="Per service"
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
      <InlineFieldRow>
        <TextField
          label="Span IDs"
          labelWidth={LABEL_WIDTH}
          value={spans}
          width={36}
          placeholder="comma-separated, 16 hex digits each"
          tooltip="Only the samples of these spans (the span attribute pyroscope.profile.id)"
          validate={(t) => requestErrors(query.traceId, parseIds(t)).spanSelector}
          onCommit={(t) => update({ spanSelector: parseIds(t) })}
        />
        <MaxNodesField query={query} update={update} runQuery={runQuery} />
      </InlineFieldRow>
    </OptionsRow>
  );
}

interface MaxNodesProps {
  query: HsiQuery;
  update: FieldsProps['update'];
  runQuery: () => void;
  labelWidth?: number;
}

export function MaxNodesField({ query, update, runQuery, labelWidth }: MaxNodesProps) {
  return (
    <NumberField
      label="Max nodes"
      labelWidth={labelWidth}
      value={query.maxNodes}
      placeholder={String(DEFAULT_MAX_NODES)}
      tooltip="Flame graph nodes kept; the smallest are merged"
      onChange={(maxNodes) => update({ maxNodes }, false)}
      onBlur={runQuery}
    />
  );
}

function traceOptions(traces: TraceSummary[] | null): Array<ComboboxOption<string>> {
  return [...(traces ?? [])]
    .sort((a, b) => b.durationMs - a.durationMs)
    .map((t) => ({
      value: t.traceId,
      label: `${t.rootOperation} · ${formatDuration(t.durationMs)}`,
      description: [t.traceId, count(t.spans, 'span'), (t.services ?? []).join(', ')].filter(Boolean).join(' · '),
    }));
}

const formatDuration = (ms: number) => (ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${Math.round(ms)} ms`);
