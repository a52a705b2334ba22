import React from 'react';
import { InlineFieldRow } from '@grafana/ui';

import { DEFAULT_PROFILE_TYPE } from '../../types';
import { MaxNodesField, maxNodesSummary } from './RequestFields';
import { FieldsProps, ProfileTypeField, useProfileTypes } from './SelectorFields';
import { LABEL_WIDTH, NumberField, OptionsRow, Picker, SwitchField, TextField, stringOptions } from './fields';
import {
  SPAN_TRACES,
  TAIL_TRACES,
  durationError,
  percentileError,
  spanLimitError,
  tailThresholdError,
  tailTracesError,
} from '../validation';

/** "process_cpu · cpu", as the profile type picker names it, from its ID. */
const profileTypeName = (id: string) => {
  const parts = id.split(':');
  return parts.length === 5 ? `${parts[0]} · ${parts[1]}` : id;
};

/**
 * Span heatmap, span profile and slow tail: the spans of one service's operation in the trace store (Jaeger or Tempo) (or all its
 * operations) slower than a minimum duration or, for the profile, a percentile of their durations.
 * The service and operation are fields of the query, so they stay when the type is switched
 * between these two and slow requests, and when Grafana draws the editor again.
 */
export function SpanFields({ query, update, runQuery, datasource, from, to }: FieldsProps) {
  const isProfile = query.queryType === 'spanProfile';
  const isTail = query.queryType === 'tail';
  const service = query.service;
  const limitError = spanLimitError(query.limit);
  const maxTracesError = isTail ? tailTracesError(query.maxTraces) : undefined;
  const profileType = { query, update, datasource, from, to };
  const summary = [`${query.limit || SPAN_TRACES.default} traces`];
  if (isTail) {
    summary.push(`${query.maxTraces || TAIL_TRACES.default} tail requests`);
  } else {
    summary.push(maxNodesSummary(query.maxNodes));
  }
  if (!isProfile && query.profileTypeId && query.profileTypeId !== DEFAULT_PROFILE_TYPE) {
    summary.push(`Profile ${profileTypeName(query.profileTypeId)}`);
  }

  return (
    <>
      <InlineFieldRow>
        <Picker
          label="Service"
          labelWidth={LABEL_WIDTH}
          value={service}
          placeholder="Choose a service"
          tooltip="The service whose spans are read (required: the trace store is searched one service at a time)"
          width={24}
          load={async () => stringOptions(await datasource.getTraceServices())}
          // Another service has other operations.
          onChange={(s) => s !== service && update({ service: s || undefined, operation: undefined })}
        />
        <Picker
          label="Operation"
          value={query.operation}
          placeholder={service ? (isTail ? 'Choose an endpoint' : 'All operations') : 'Choose a service first'}
          tooltip={
            isTail
              ? 'The endpoint: the span name of its requests (required)'
              : 'The span name; none: every operation of the service'
          }
          width={32}
          clearable
          disabled={!service}
          load={async () => (service ? stringOptions(await datasource.getTraceOperations(service)) : [])}
          onChange={(operation) => update({ operation: operation || undefined })}
        />
      </InlineFieldRow>
      <InlineFieldRow>
        <TextField
          label="Min duration"
          value={query.minDuration}
          width={12}
          placeholder="any"
          tooltip={
            isTail
              ? 'The tail is the requests at least this long, e.g. 800ms (a plain number is milliseconds); or use Percentile or SLO'
              : isProfile
                ? 'Merge the spans at least this long, e.g. 20ms, 1.5s (a plain number is milliseconds); or use Percentile'
                : 'Only spans at least this long, e.g. 20ms, 1.5s; a plain number is milliseconds'
          }
          validate={durationError}
          onCommit={(minDuration) => update({ minDuration: minDuration.trim() || undefined })}
        />
      </InlineFieldRow>
      {isTail && (
        <InlineFieldRow>
          <NumberField
            label="Percentile"
            labelWidth={LABEL_WIDTH}
            value={query.percentile}
            placeholder="95"
            width={12}
            tooltip="The tail is the requests at or above this percentile of the endpoint's durations over the range (default 95)"
            error={tailThresholdError(query.percentile, query.minDuration, query.slo)}
            onChange={(percentile) => update({ percentile }, false)}
            onBlur={runQuery}
          />
          <SwitchField
            label="Over the SLO"
            value={query.slo}
            tooltip="The tail is the requests over the data source's latency SLO (its yellow latency threshold)"
            onChange={(slo) => update({ slo })}
          />
        </InlineFieldRow>
      )}
      {isProfile && (
        <>
          {/* A row of its own: beside Min duration, the two fields' messages would overlap. */}
          <InlineFieldRow>
            <NumberField
              label="Percentile"
              labelWidth={LABEL_WIDTH}
              value={query.percentile}
              placeholder="e.g. 95"
              width={12}
              tooltip="Or merge the spans at or above this percentile of the operation's durations, e.g. 95: the slowest 5%"
              error={percentileError(query.percentile, query.minDuration)}
              onChange={(percentile) => update({ percentile }, false)}
              onBlur={runQuery}
            />
          </InlineFieldRow>
          <InlineFieldRow>
            <SpanProfileType {...profileType} tooltip="The profile merged from the spans" />
          </InlineFieldRow>
        </>
      )}
      <OptionsRow summary={summary} startOpen={Boolean(limitError || maxTracesError)}>
        <InlineFieldRow>
          <NumberField
            label="Limit"
            labelWidth={LABEL_WIDTH}
            value={query.limit}
            placeholder={String(SPAN_TRACES.default)}
            tooltip={`Traces read from the trace store's search, at most ${SPAN_TRACES.max}`}
            error={limitError}
            onChange={(limit) => update({ limit }, false)}
            onBlur={runQuery}
          />
          {isTail ? (
            <NumberField
              label="Tail requests"
              value={query.maxTraces}
              placeholder={String(TAIL_TRACES.default)}
              tooltip={`Tail requests diagnosed, the newest first, at most ${TAIL_TRACES.max}: each is a request's join`}
              error={maxTracesError}
              onChange={(maxTraces) => update({ maxTraces }, false)}
              onBlur={runQuery}
            />
          ) : (
            <MaxNodesField query={query} update={update} runQuery={runQuery} />
          )}
        </InlineFieldRow>
        {!isProfile && (
          <InlineFieldRow>
            <SpanProfileType
              {...profileType}
              tooltip={
                isTail
                  ? "The CPU profile each request's verdict reads"
                  : "The profile the slowest spans' links open as a flame graph"
              }
            />
          </InlineFieldRow>
        )}
      </OptionsRow>
    </>
  );
}

type SpanProfileTypeProps = Pick<FieldsProps, 'query' | 'update' | 'datasource' | 'from' | 'to'> & {
  tooltip: string;
};

/** The profile type picker, asking for the types only once drawn (the heatmap has it under Options). */
function SpanProfileType({ query, update, datasource, from, to, tooltip }: SpanProfileTypeProps) {
  const types = useProfileTypes(datasource, from, to);
  return (
    <ProfileTypeField
      query={query}
      update={update}
      types={types}
      field="profileTypeId"
      label="Profile type"
      fallback={DEFAULT_PROFILE_TYPE}
      labelWidth={LABEL_WIDTH}
      tooltip={tooltip}
    />
  );
}
