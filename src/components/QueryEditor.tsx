import React, { useId } from 'react';
import { QueryEditorProps } from '@grafana/data';
import { InlineField, InlineFieldRow, MultiCombobox, RadioButtonGroup } from '@grafana/ui';

import { DataSource } from '../datasource';
import { HsiOptions, HsiQuery, QUERY_TYPES, QueryType } from '../types';
import { DiffFields } from './DiffFields';
import { RequestFields } from './RequestFields';
import { FieldsProps, SelectorFields } from './SelectorFields';
import { LABEL_WIDTH, NumberField, stringOptions } from './fields';

type Props = QueryEditorProps<DataSource, HsiQuery, HsiOptions>;

/** A query-type picker, then the fields of that type. */
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
  const hasFlameGraph = queryType !== 'metrics';
  const hasSeries = queryType === 'metrics' || queryType === 'both';

  return (
    <>
      <InlineFieldRow>
        <InlineField label="Query type" labelWidth={LABEL_WIDTH}>
          <RadioButtonGroup<QueryType>
            aria-label="Query type"
            options={QUERY_TYPES.map((t) => ({ value: t.value, label: t.label, description: t.description }))}
            value={queryType}
            onChange={(v) => update({ queryType: v })}
          />
        </InlineField>
      </InlineFieldRow>
      <SelectorFields {...fields} />
      {queryType === 'profile' && <RequestFields {...fields} />}
      {queryType === 'diff' && <DiffFields query={query} update={update} />}
      <InlineFieldRow>
        {hasSeries && <SeriesFields {...fields} />}
        {hasFlameGraph && (
          <NumberField
            label="Max nodes"
            value={query.maxNodes}
            placeholder="16384"
            tooltip="Flame graph nodes kept; the smallest are merged"
            onChange={(maxNodes) => update({ maxNodes }, false)}
            onBlur={onRunQuery}
          />
        )}
      </InlineFieldRow>
    </>
  );
}

/** Metrics and both: series grouped by labels, the top N kept. */
function SeriesFields({ query, update, runQuery, datasource, from, to }: FieldsProps) {
  const selector = query.labelSelector ?? '{}';
  const id = useId();
  return (
    <>
      <InlineField
        label="Group by"
        labelWidth={LABEL_WIDTH}
        tooltip="One series per value of these labels"
        htmlFor={id}
      >
        <MultiCombobox<string>
          id={id}
          width="auto"
          minWidth={24}
          maxWidth={60}
          placeholder="No grouping"
          value={query.groupBy ?? []}
          createCustomValue
          options={async (typed) =>
            stringOptions(await datasource.getLabelNames(selector, from, to)).filter((o) =>
              o.value.toLowerCase().includes(typed.toLowerCase())
            )
          }
          onChange={(opts) => update({ groupBy: opts.length ? opts.map((o) => o.value) : undefined })}
        />
      </InlineField>
      <NumberField
        label="Limit"
        value={query.limit}
        placeholder="all"
        tooltip="Keep the top N series"
        onChange={(limit) => update({ limit }, false)}
        onBlur={runQuery}
      />
    </>
  );
}
