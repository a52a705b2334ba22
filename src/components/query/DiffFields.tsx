import React from 'react';
import { InlineFieldRow, InlineLabel } from '@grafana/ui';

import { DiffSide, HsiQuery } from '../../types';
import { MaxNodesField, maxNodesSummary, parseIds, requestSummary } from './RequestFields';
import { LABEL_WIDTH, OptionsRow, TextField } from './fields';
import { requestErrors, selectorError, timeError } from '../validation';

const SIDES = [
  { key: 'baseline', name: 'Baseline', hint: 'e.g. from now-1h to now: the service over the last hour' },
  { key: 'comparison', name: 'Comparison', hint: 'e.g. trace ID $trace_id (under Options): this slow request' },
] as const;

interface Props {
  query: HsiQuery;
  update: (patch: Partial<HsiQuery>, run?: boolean) => void;
  runQuery: () => void;
}

/**
 * The two sides of a diff, each on one line: its time range and label selector; the request it
 * is narrowed to (trace ID or span IDs) under Options. Empty fields take the query's label
 * selector and the panel's range.
 */
export function DiffFields({ query, update, runQuery }: Props) {
  const sides = SIDES.map((s) => {
    const side = query[s.key] ?? {};
    const set = (patch: Partial<DiffSide>) => update({ [s.key]: withoutEmpty({ ...side, ...patch }) });
    return { ...s, side, set, errors: requestErrors(side.traceId, side.spanSelector) };
  });
  const summary = sides.map(({ name, side }) => `${name}: ${requestSummary(side.traceId, side.spanSelector)}`);

  return (
    <>
      {sides.map(({ key, name, hint, side, set }) => (
        <InlineFieldRow key={key}>
          <InlineLabel width={LABEL_WIDTH} tooltip={hint}>
            {name}
          </InlineLabel>
          <TextField
            label="From"
            ariaLabel={`${name} from`}
            labelWidth="auto"
            width={18}
            value={side.from}
            placeholder="panel time range"
            validate={timeError}
            onCommit={(from) => set({ from })}
          />
          <TextField
            label="To"
            ariaLabel={`${name} to`}
            labelWidth="auto"
            width={18}
            value={side.to}
            placeholder="panel time range"
            validate={timeError}
            onCommit={(to) => set({ to })}
          />
          <TextField
            label="Selector"
            ariaLabel={`${name} label selector`}
            labelWidth="auto"
            width={36}
            value={side.labelSelector}
            placeholder="same selector as the query"
            validate={selectorError}
            onCommit={(labelSelector) => set({ labelSelector })}
          />
        </InlineFieldRow>
      ))}
      <OptionsRow
        summary={[...summary, maxNodesSummary(query.maxNodes)]}
        startOpen={sides.some(({ errors }) => errors.traceId || errors.spanSelector)}
      >
        {sides.map(({ key, name, side, set }) => (
          <InlineFieldRow key={key}>
            <InlineLabel width={LABEL_WIDTH}>{name}</InlineLabel>
            <TextField
              label="Trace ID"
              ariaLabel={`${name} trace ID`}
              labelWidth="auto"
              width={36}
              value={side.traceId}
              placeholder={key === 'comparison' ? 'e.g. $trace_id' : 'all requests'}
              validate={(t) => requestErrors(t, side.spanSelector).traceId}
              onCommit={(traceId) => set({ traceId })}
            />
            <TextField
              label="Span IDs"
              ariaLabel={`${name} span IDs`}
              labelWidth="auto"
              width={36}
              value={(side.spanSelector ?? []).join(', ')}
              placeholder="comma-separated"
              validate={(t) => requestErrors(side.traceId, parseIds(t)).spanSelector}
              onCommit={(t) => set({ spanSelector: parseIds(t) })}
            />
          </InlineFieldRow>
        ))}
        <InlineFieldRow>
          <MaxNodesField query={query} update={update} runQuery={runQuery} labelWidth={LABEL_WIDTH} />
        </InlineFieldRow>
      </OptionsRow>
    </>
  );
}

/** Drops blank fields, and the side itself when nothing is left, so the backend's defaults apply. */
function withoutEmpty(side: DiffSide): DiffSide | undefined {
  const kept = Object.entries(side).filter(([, v]) => (Array.isArray(v) ? v.length > 0 : v?.trim()));
  return kept.length ? (Object.fromEntries(kept) as DiffSide) : undefined;
}
