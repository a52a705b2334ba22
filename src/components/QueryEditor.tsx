import React, { useId } from 'react';
import { QueryEditorProps } from '@grafana/data';
import { Combobox, InlineField, InlineFieldRow } from '@grafana/ui';

import { DataSource } from '../datasource';
import { HsiOptions, HsiQuery, QUERY_TYPES, QUERY_VIEWS, QueryType, queryFamily } from '../types';
import { DiffFields } from './query/DiffFields';
import { GpuFilterFields, GpuLocalFields, GpuMetricsFields } from './query/GpuFields';
import { KernelFields } from './query/KernelFields';
import { PyroscopeOptions } from './query/PyroscopeOptions';
import { RequestFields } from './query/RequestFields';
import { FieldsProps, SelectorFields } from './query/SelectorFields';
import { SlowRequestFields } from './query/SlowRequestFields';
import { SpanFields } from './query/SpanFields';
import { TraceFields } from './query/TraceFields';
import { TriageFields } from './query/TriageFields';
import { LABEL_WIDTH, MultiPicker, NumberField, stringOptions } from './query/fields';

type Props = QueryEditorProps<DataSource, HsiQuery, HsiOptions>;

/** A query-type picker, then the fields of that type; the less common ones under Options. */
export function QueryEditor({ query, onChange, onRunQuery, datasource, range }: Props) {
  const queryType = query.queryType ?? 'profile';
  const update = (patch: Partial<HsiQuery>, run = true) => {
    onChange({ ...query, ...patch });
    if (run) {
      onRunQuery();
    }
  };
  const fields: FieldsProps = {
    query,
    update,
    runQuery: onRunQuery,
    datasource,
    from: range?.from.valueOf(),
    to: range?.to.valueOf(),
  };
  const family = queryFamily(queryType);
  const isProfile = family === 'profile';
  const hasSeries = queryType === 'metrics' || queryType === 'both';
  const isSpans = family === 'spans';
  // The editor keeps the fields of other types when the type changes (the backend ignores them),
  // but a view only for a type that has it: gpuLocal's and triage's parsers refuse each other's.
  const switchType = (t: QueryType) => {
    const views = QUERY_VIEWS[t];
    const otherView = query.view !== undefined && views !== undefined && !views.includes(query.view);
    update(otherView ? { queryType: t, view: undefined } : { queryType: t });
  };
  const id = useId();

  return (
    <>
      <InlineFieldRow>
        <InlineField label="Query type" labelWidth={LABEL_WIDTH} htmlFor={id}>
          <Combobox<QueryType>
            id={id}
            width={24}
            options={QUERY_TYPES.map((t) => ({ value: t.value, label: t.label, description: t.description }))}
            value={queryType}
            onChange={(t) => switchType(t.value)}
          />
        </InlineField>
      </InlineFieldRow>
      {isProfile && <SelectorFields {...fields} />}
      {hasSeries && <SeriesFields {...fields} />}
      {hasSeries && <PyroscopeOptions {...fields} withProfile={queryType === 'both'} />}
      {queryType === 'profile' && <RequestFields {...fields} />}
      {queryType === 'diff' && <DiffFields query={query} update={update} runQuery={onRunQuery} />}
      {queryType === 'trace' && <TraceFields {...fields} />}
      {queryType === 'slowRequests' && <SlowRequestFields {...fields} />}
      {isSpans && <SpanFields {...fields} />}
      {queryType === 'gpuMetrics' && <GpuMetricsFields {...fields} />}
      {queryType === 'gpuClass' && <GpuFilterFields {...fields} />}
      {queryType === 'gpuLocal' && <GpuLocalFields {...fields} />}
      {queryType === 'kernels' && <KernelFields {...fields} />}
      {queryType === 'triage' && <TriageFields {...fields} />}
    </>
  );
}

/** Metrics and both: series grouped by labels, the top N kept. */
function SeriesFields({ query, update, runQuery, datasource, from, to }: FieldsProps) {
  const selector = query.labelSelector ?? '{}';
  return (
    <InlineFieldRow>
      <MultiPicker
        label="Group by"
        labelWidth={LABEL_WIDTH}
        tooltip="One series per value of these labels"
        placeholder="No grouping"
        value={query.groupBy}
        load={async () => stringOptions(await datasource.getLabelNames(selector, from, to))}
        onChange={(groupBy) => update({ groupBy })}
      />
      <NumberField
        label="Limit"
        value={query.limit}
        placeholder="all"
        tooltip="Keep the top N series"
        onChange={(limit) => update({ limit }, false)}
        onBlur={runQuery}
      />
    </InlineFieldRow>
  );
}
