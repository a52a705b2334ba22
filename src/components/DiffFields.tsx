import React from 'react';
import { InlineFieldRow, InlineLabel } from '@grafana/ui';

import { DiffSide, HsiQuery } from '../types';
import { parseIds } from './RequestFields';
import { TextField } from './fields';
import { requestErrors, selectorError, timeError } from './validation';

const SIDES = [
  { key: 'baseline', name: 'Baseline', hint: 'e.g. from now-1h to now: the service over the last hour' },
  { key: 'comparison', name: 'Comparison', hint: 'e.g. trace ID $trace_id: this slow request' },
] as const;

interface Props {
  query: HsiQuery;
  update: (patch: Partial<HsiQuery>) => void;
}

/** The two sides of a diff. Empty fields take the query's label selector and the panel's range. */
export function DiffFields({ query, update }: Props) {
  return (
    <>
      {SIDES.map(({ key, name, hint }) => {
        const side = query[key] ?? {};
        const set = (patch: Partial<DiffSide>) => update({ [key]: withoutEmpty({ ...side, ...patch }) });
        return (
          <InlineFieldRow key={key}>
            <InlineLabel width={12} tooltip={hint}>
              {name}
            </InlineLabel>
            <TextField
              label="From"
              ariaLabel={`${name} from`}
              labelWidth={6}
              width={12}
              value={side.from}
              placeholder="panel"
              validate={timeError}
              onCommit={(from) => set({ from })}
            />
            <TextField
              label="To"
              ariaLabel={`${name} to`}
              labelWidth={4}
              width={12}
              value={side.to}
              placeholder="panel"
              validate={timeError}
              onCommit={(to) => set({ to })}
            />
            <TextField
              label="Selector"
              ariaLabel={`${name} label selector`}
              labelWidth={10}
              width={36}
              value={side.labelSelector}
              placeholder="the query's"
              validate={selectorError}
              onCommit={(labelSelector) => set({ labelSelector })}
            />
            <TextField
              label="Trace ID"
              ariaLabel={`${name} trace ID`}
              labelWidth={10}
              width={36}
              value={side.traceId}
              placeholder={key === 'comparison' ? '$trace_id' : ''}
              validate={(t) => requestErrors(t, side.spanSelector).traceId}
              onCommit={(traceId) => set({ traceId })}
            />
            <TextField
              label="Span IDs"
              ariaLabel={`${name} span IDs`}
              labelWidth={10}
              width={24}
              value={(side.spanSelector ?? []).join(', ')}
              validate={(t) => requestErrors(side.traceId, parseIds(t)).spanSelector}
              onCommit={(t) => set({ spanSelector: parseIds(t) })}
            />
          </InlineFieldRow>
        );
      })}
    </>
  );
}

/** Drops blank fields, and the side itself when nothing is left, so the backend's defaults apply. */
function withoutEmpty(side: DiffSide): DiffSide | undefined {
  const kept = Object.entries(side).filter(([, v]) => (Array.isArray(v) ? v.length > 0 : v?.trim()));
  return kept.length ? (Object.fromEntries(kept) as DiffSide) : undefined;
}
