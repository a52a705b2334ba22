import React from 'react';
import { InlineField, InlineFieldRow, RadioButtonGroup } from '@grafana/ui';

import { HsiQuery } from '../../types';
import {
  MaxNodesField,
  ProfileSelectorFields,
  maxNodesSummary,
  profileSelectorSummary,
  profileSelectorsWrong,
} from './RequestFields';
import { FieldsProps } from './SelectorFields';
import { LABEL_WIDTH, OptionsRow, SwitchField } from './fields';

/*
 * The options of Grafana's Pyroscope data source for series: exemplars, a heatmap instead of
 * series, ingestion annotations (metrics, both); same names and meanings as there, so its queries
 * open here. The profile ID and call site selectors (profile, both) are in RequestFields.
 */

type HeatmapType = NonNullable<HsiQuery['heatmapType']>;

const HEATMAP_TYPES: Array<{ value: HeatmapType; label: string; description: string }> = [
  { value: 'individual', label: 'Individual', description: "Each individual profile's value" },
  { value: 'span', label: 'Span', description: "Each span's value, from its span profile" },
];

/** The options row's words for the series options: "Exemplars", "Heatmap: span", "Annotations". */
export function seriesSummary(query: HsiQuery): string[] {
  return [
    query.includeExemplars ? 'Exemplars' : '',
    query.includeHeatmap ? `Heatmap: ${query.heatmapType ?? 'individual'}` : '',
    query.annotations ? 'Annotations' : '',
  ].filter(Boolean);
}

type Props = Pick<FieldsProps, 'query' | 'update'>;

/** Metrics and both: exemplar markers, a heatmap instead of series, and Pyroscope's annotations. */
export function SeriesOptionFields({ query, update }: Props) {
  return (
    <InlineFieldRow>
      <SwitchField
        label="Exemplars"
        labelWidth={LABEL_WIDTH}
        tooltip="Markers for the individual profiles behind each point; needs Pyroscope 1.17 or later"
        value={query.includeExemplars}
        onChange={(includeExemplars) => update({ includeExemplars })}
      />
      <SwitchField
        label="Heatmap"
        tooltip="A heatmap of individual profiles' or spans' values instead of series; needs Pyroscope 1.19 or later"
        value={query.includeHeatmap}
        // Off, the type means nothing: it leaves the query with the switch.
        onChange={(includeHeatmap) => update({ includeHeatmap, heatmapType: includeHeatmap && query.heatmapType })}
      />
      <InlineField
        label="Heatmap type"
        disabled={!query.includeHeatmap}
        tooltip="Individual: each profile's value; Span: each span's, from span profiles"
      >
        <RadioButtonGroup<HeatmapType>
          aria-label="Heatmap type"
          options={HEATMAP_TYPES}
          value={query.heatmapType ?? 'individual'}
          disabled={!query.includeHeatmap}
          onChange={(heatmapType) => update({ heatmapType })}
        />
      </InlineField>
      <SwitchField
        label="Annotations"
        tooltip="Pyroscope's ingestion annotations on the series: throttling, sampling"
        value={query.annotations}
        onChange={(annotations) => update({ annotations })}
      />
    </InlineFieldRow>
  );
}

/** The options row of metrics (series options) and both (those, the profile selectors and max nodes). */
export function PyroscopeOptions({ query, update, runQuery, withProfile }: FieldsProps & { withProfile: boolean }) {
  const summary = [
    ...seriesSummary(query),
    ...(withProfile ? [...profileSelectorSummary(query), maxNodesSummary(query.maxNodes)] : []),
  ];
  return (
    <OptionsRow summary={summary} startOpen={withProfile && profileSelectorsWrong(query)}>
      <SeriesOptionFields query={query} update={update} />
      {withProfile && (
        <>
          <ProfileSelectorFields query={query} update={update} />
          <InlineFieldRow>
            <MaxNodesField query={query} update={update} runQuery={runQuery} labelWidth={LABEL_WIDTH} />
          </InlineFieldRow>
        </>
      )}
    </OptionsRow>
  );
}
