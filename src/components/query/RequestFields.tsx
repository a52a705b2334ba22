import React from 'react';
import { ComboboxOption, InlineField, InlineFieldRow, InlineSwitch } from '@grafana/ui';

import { DataSource } from '../../datasource';
import { HsiQuery, TraceSummary } from '../../types';
import { FieldsProps } from './SelectorFields';
import { LABEL_WIDTH, NumberField, OptionsRow, Picker, TextField, count } from './fields';
import { matcherValue } from './selector';
import { MAX_NODES, callSiteError, profileIdsError, requestErrors } from '../validation';

const RECENT_TRACES = 20;

/** What the flame graph keeps when maxNodes is unset (the backend's default). */
export const DEFAULT_MAX_NODES = MAX_NODES.default;

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

const PROFILE_ID_EXAMPLE = '7c9e6679-7425-40de-944b-e07fc1f90ae7';

/**
 * A call site as typed: function names, root first, separated by commas. Commas inside brackets
 * belong to the name (C++ templates, Go generics: std::map<int, int>::find), unless the brackets
 * do not pair up (operator<), where every comma separates. Empty names are kept, for the field to
 * say which one is empty; blank text is unset.
 */
export function parseCallSite(text: string): string[] | undefined {
  if (text.trim() === '') {
    return undefined;
  }
  const names: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if ('([{<'.includes(c)) {
      depth++;
    } else if (')]}>'.includes(c)) {
      depth = Math.max(0, depth - 1);
    } else if (c === ',' && depth === 0) {
      names.push(text.slice(start, i));
      start = i + 1;
    }
  }
  names.push(text.slice(start));
  const paired = depth === 0;
  return (paired ? names : text.split(',')).map((n) => n.trim());
}

const shortName = (s: string) => (s.length > 32 ? `${s.slice(0, 31)}…` : s);

/** The options row's words for the profile selectors: "2 profiles", "Call site: … › handle". */
export function profileSelectorSummary(query: HsiQuery): string[] {
  const out: string[] = [];
  const ids = query.profileIdSelector ?? [];
  if (ids.length) {
    out.push(count(ids.length, 'profile'));
  }
  const site = query.stackTraceSelector ?? [];
  if (site.length) {
    out.push(`Call site: ${site.length > 1 ? '… › ' : ''}${shortName(site[site.length - 1])}`);
  }
  return out;
}

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
 * typed, or span IDs), one flame graph per service, the flame graph's size, and Grafana's
 * Pyroscope selectors (some individual profiles, the stacks under a call site).
 */
export function RequestFields({ query, update, runQuery, datasource, from, to }: FieldsProps) {
  const service = matcherValue(query.labelSelector ?? '', 'service_name');
  const spans = (query.spanSelector ?? []).join(', ');
  const errors = requestErrors(query.traceId, query.spanSelector);
  // Profile IDs name the profiles: "2 profiles" replaces "All requests" (beside a trace ID, an error).
  const onlyProfiles = Boolean(query.profileIdSelector?.length) && !query.traceId && !query.spanSelector?.length;

  return (
    <OptionsRow
      summary={[
        ...(onlyProfiles ? [] : [capitalised(requestSummary(query.traceId, query.spanSelector, query.perService))]),
        ...profileSelectorSummary(query),
        maxNodesSummary(query.maxNodes),
      ]}
      startOpen={Boolean(errors.traceId || errors.spanSelector || profileSelectorsWrong(query))}
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
      <ProfileSelectorFields query={query} update={update} />
    </OptionsRow>
  );
}

/** Profile and both: only some individual profiles, only the stacks under a call site. */
export function ProfileSelectorFields({ query, update }: Pick<FieldsProps, 'query' | 'update'>) {
  return (
    <InlineFieldRow>
      <TextField
        label="Profile IDs"
        labelWidth={LABEL_WIDTH}
        value={(query.profileIdSelector ?? []).join(', ')}
        width={36}
        placeholder="comma-separated UUIDs"
        tooltip={`Only these individual profiles, e.g. from an exemplar (${PROFILE_ID_EXAMPLE}); not with a trace ID or span IDs`}
        validate={(t) => profileIdsError(parseIds(t), query.traceId, query.spanSelector)}
        onCommit={(t) => update({ profileIdSelector: parseIds(t) })}
      />
      <TextField
        label="Call site"
        labelWidth="auto"
        value={(query.stackTraceSelector ?? []).join(', ')}
        width={32}
        placeholder="functions, root first"
        tooltip="Only the stacks under this call site: function names from the root, separated by commas, e.g. main, handle"
        validate={(t) => callSiteError(parseCallSite(t))}
        onCommit={(t) => update({ stackTraceSelector: parseCallSite(t) })}
      />
    </InlineFieldRow>
  );
}

/** Whether a stored query's profile selectors are wrong: the options row then opens by itself. */
export const profileSelectorsWrong = (query: HsiQuery) =>
  Boolean(
    profileIdsError(query.profileIdSelector, query.traceId, query.spanSelector) ||
    callSiteError(query.stackTraceSelector)
  );

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
