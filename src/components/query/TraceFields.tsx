import React, { useState } from 'react';
import { InlineFieldRow } from '@grafana/ui';

import { DataSource } from '../../datasource';
import { TRACE_PARTS } from '../../generated/vocabulary';
import { DEFAULT_ALLOC_TYPE, DEFAULT_PROFILE_TYPE, TracePart } from '../../types';
import { withText } from './GpuFields';
import { MaxNodesField, SlowTracesPicker, TraceIdField, maxNodesSummary } from './RequestFields';
import { FieldsProps, ProfileTypeField, useProfileTypes } from './SelectorFields';
import { LABEL_WIDTH, MultiPicker, OptionsRow, Picker, stringOptions } from './fields';
import { traceIdError } from '../validation';

/**
 * The trace store's service last picked in each data source's trace editor. The editor is mounted anew
 * when the query type is switched away and back, and when Grafana draws the query row again (the
 * row collapsed and opened, the panel editor reopened); Grafana keeps one DataSource object per
 * data source meanwhile. The service only narrows the slow-trace picker and the backend reads no
 * such field of a trace query (it would warn of an unknown field), so it stays out of the query.
 */
const lastService = new WeakMap<DataSource, string>();

function useRememberedService(datasource: DataSource): [string | undefined, (service: string) => void] {
  const [service, setService] = useState(() => lastService.get(datasource));
  const remember = (s: string) => {
    if (s) {
      lastService.set(datasource, s);
    } else {
      lastService.delete(datasource);
    }
    setService(s || undefined);
  };
  return [service, remember];
}

/**
 * The request-level join of one trace: its ID (typed, $trace_id, or picked from a service's
 * slowest traces) and the profile types read for each span's CPU and allocations.
 */
/** The parts of the answer as the picker shows them (pkg/models/trace_query.go). */
const PARTS = withText<TracePart>(TRACE_PARTS, {
  spans: { label: 'Spans', description: "Each span's duration, self time, CPU, allocations and GPU state" },
  breakdown: { label: 'Breakdown', description: "Where the request's time went" },
  verdict: { label: 'Verdict', description: 'Why it was slow: the causes, ranked, with their evidence and what to do' },
  flamegraph: { label: 'Flame graph', description: "The request's flame graph" },
});

const PART_LABELS = new Map<string, string>(PARTS.map((p) => [p.value, p.label]));

const partLabel = (value: string) => PART_LABELS.get(value) ?? value;

/** The options row's words for the parts: "Parts: Verdict", or the whole answer. */
export const partsSummary = (parts?: string[]) =>
  parts?.length ? `Parts: ${parts.map(partLabel).join(', ')}` : 'Whole answer';

export function TraceFields({ query, update, runQuery, datasource, from, to }: FieldsProps) {
  const [service, setService] = useRememberedService(datasource);
  // One call for both pickers.
  const types = useProfileTypes(datasource, from, to);
  const profileType = { query, update, types };

  return (
    <>
      <InlineFieldRow>
        <TraceIdField
          value={query.traceId}
          tooltip="The request: every span of this trace, across services"
          validate={traceIdError}
          onChange={(traceId) => update({ traceId })}
        />
      </InlineFieldRow>
      <InlineFieldRow>
        <Picker
          label="Service"
          labelWidth={LABEL_WIDTH}
          value={service}
          placeholder="To list its traces"
          tooltip="A service of the trace store, to list its slowest recent traces under Slow traces; not part of the query"
          width={24}
          clearable
          load={async () => stringOptions(await datasource.getTraceServices())}
          onChange={setService}
        />
        <SlowTracesPicker
          service={service}
          onChange={(traceId) => update({ traceId: traceId || undefined })}
          datasource={datasource}
          from={from}
          to={to}
          width={40}
        />
      </InlineFieldRow>
      <InlineFieldRow>
        <ProfileTypeField
          {...profileType}
          field="profileTypeId"
          label="CPU profile"
          fallback={DEFAULT_PROFILE_TYPE}
          labelWidth={LABEL_WIDTH}
        />
        <ProfileTypeField {...profileType} field="allocTypeId" label="Allocations" fallback={DEFAULT_ALLOC_TYPE} />
      </InlineFieldRow>
      <OptionsRow summary={[maxNodesSummary(query.maxNodes), partsSummary(query.parts)]}>
        <InlineFieldRow>
          <MaxNodesField query={query} update={update} runQuery={runQuery} labelWidth={LABEL_WIDTH} />
          <MultiPicker
            label="Parts"
            value={query.parts}
            labelOf={partLabel}
            placeholder="The whole answer"
            tooltip="The parts of the answer this panel shows, one frame each; none chosen: all (a table then shows a frame picker)"
            load={async () => PARTS}
            onChange={(parts) => update({ parts: parts as TracePart[] | undefined })}
          />
        </InlineFieldRow>
      </OptionsRow>
    </>
  );
}
