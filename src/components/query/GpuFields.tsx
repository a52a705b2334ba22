import React from 'react';
import { ComboboxOption, InlineField, InlineFieldRow, RadioButtonGroup } from '@grafana/ui';

import { GPU_AGGREGATIONS, GPU_CATALOGUE, GPU_LOCAL_VIEWS } from '../../generated/vocabulary';
import { GpuAggregation, GpuLocalView, GpuMetric, GpuRole } from '../../types';
import { FieldsProps } from './SelectorFields';
import { LABEL_WIDTH, MultiPicker, stringOptions } from './fields';

/**
 * The GPU queries' label filters, in picker order, each with the role the backend lists it by:
 * the machines on one row, Kubernetes on the next.
 */
type Filter = {
  role: GpuRole;
  field: 'hosts' | 'gpus' | 'models' | 'pods' | 'namespaces';
  label: string;
  placeholder: string;
  tooltip?: string;
};
const FILTER_ROWS: Filter[][] = [
  [
    { role: 'host', field: 'hosts', label: 'Hosts', placeholder: 'All hosts' },
    {
      role: 'gpu',
      field: 'gpus',
      label: 'GPUs',
      placeholder: 'All GPUs',
      tooltip: "Index or UUID; lists the chosen hosts' GPUs",
    },
    { role: 'model', field: 'models', label: 'Models', placeholder: 'All models' },
  ],
  [
    { role: 'namespace', field: 'namespaces', label: 'Namespaces', placeholder: 'All namespaces' },
    { role: 'pod', field: 'pods', label: 'Pods', placeholder: 'All pods' },
  ],
];

/** What the pickers show of each aggregation and view; the values and their order are the backend's. */
type Text = { label: string; description: string };
export const withText = <T extends string>(values: readonly T[], text: Record<T, Text>) =>
  values.map((value) => ({ value, ...text[value] }));

const AGGREGATIONS = withText<GpuAggregation>(GPU_AGGREGATIONS, {
  gpu: { label: 'Per GPU', description: 'One series per GPU' },
  host: { label: 'Per host', description: 'One series per host' },
  fleet: { label: 'Fleet', description: 'One series over all the selected GPUs' },
});

const LOCAL_VIEWS = withText<GpuLocalView>(GPU_LOCAL_VIEWS, {
  devices: { label: 'Devices', description: 'One row per GPU, as NVML reads it now' },
  processes: { label: 'Processes', description: 'The processes running on each GPU and their memory' },
  xid: { label: 'XID events', description: 'XID errors the driver reported' },
  series: { label: 'Series', description: "The sampler's recent samples, one frame per GPU" },
  class: {
    label: 'Class',
    description: 'Per GPU: compute-, memory-, PCIe-bound, throttled or idle, from the recent samples',
  },
});

/** The value if it is one of values: a view of another query type, or a typo, is none of them. */
export const oneOf = <T extends string>(values: readonly T[], value?: string): T | undefined =>
  values.find((v) => v === value);

/** Local GPUs (NVML): the view of the Grafana host's GPUs; needs jsonData.nvmlEnabled. */
export function GpuLocalFields({ query, update }: FieldsProps) {
  return (
    <InlineFieldRow>
      <InlineField
        label="View"
        labelWidth={LABEL_WIDTH}
        tooltip="The GPUs of the host Grafana runs on, read through NVML; turn it on in the data source settings (Local GPUs)"
      >
        <RadioButtonGroup<GpuLocalView>
          aria-label="View"
          options={LOCAL_VIEWS}
          value={query.view === undefined ? 'devices' : oneOf(GPU_LOCAL_VIEWS, query.view)}
          onChange={(view) => update({ view })}
        />
      </InlineField>
    </InlineFieldRow>
  );
}

/** DCGM series by name from the backend's catalogue, aggregated per GPU, per host or fleet-wide. */
export function GpuMetricsFields(props: FieldsProps) {
  const { query, update, datasource } = props;
  return (
    <>
      <InlineFieldRow>
        <MultiPicker
          label="Metrics"
          labelWidth={LABEL_WIDTH}
          value={query.metrics}
          labelOf={metricLabel}
          placeholder="GPU utilisation"
          tooltip="DCGM exporter series; none chosen: GPU utilisation"
          load={async () => metricOptions(await datasource.getGpuMetrics())}
          onChange={(metrics) => update({ metrics })}
        />
        <InlineField label="Aggregation" labelWidth="auto">
          <RadioButtonGroup<GpuAggregation>
            aria-label="Aggregation"
            options={AGGREGATIONS}
            value={query.aggregation ?? 'gpu'}
            onChange={(aggregation) => update({ aggregation })}
          />
        </InlineField>
      </InlineFieldRow>
      <GpuFilterFields {...props} />
    </>
  );
}

/**
 * Which GPUs a GPU query covers: values with GPU series in the dashboard's range, or variables.
 * The GPU picker lists the chosen hosts' GPUs only.
 */
export function GpuFilterFields({ query, update, datasource, from, to }: FieldsProps) {
  return (
    <>
      {FILTER_ROWS.map((filters) => (
        <InlineFieldRow key={filters[0].role}>
          {filters.map(({ role, field, label, placeholder, tooltip }, i) => (
            <MultiPicker
              key={role}
              label={label}
              tooltip={tooltip}
              labelWidth={i === 0 ? LABEL_WIDTH : undefined}
              value={query[field]}
              placeholder={placeholder}
              load={async () =>
                stringOptions(
                  await datasource.getGpuLabelValues(role, from, to, role === 'gpu' ? query.hosts : undefined)
                )
              }
              onChange={(values) => update({ [field]: values })}
            />
          ))}
        </InlineFieldRow>
      ))}
    </>
  );
}

/** Grafana's unit IDs of the catalogue, as a person says them. */
const UNIT_WORDS: Record<string, string> = {
  percent: 'percent',
  // Grafana shows a 0–1 ratio as a percentage.
  percentunit: 'percent',
  mbytes: 'MiB',
  celsius: '°C',
  watt: 'watts',
  joule: 'joules',
  rotmhz: 'MHz',
  Bps: 'bytes per second',
  ops: 'per second',
  short: 'count',
  hex0x: 'bit mask',
};

/** A catalogue entry as the gpu-metrics resource sends it: GpuMetric and its display title. */
type CatalogueEntry = GpuMetric & { title?: string };

/** The title and the unit in words: "Framebuffer used (MiB)"; a name unknown here as it is. */
function metricText({ name, title, unit }: CatalogueEntry): string {
  const words = UNIT_WORDS[unit];
  return `${title || name}${words ? ` (${words})` : ''}`;
}

const CATALOGUE = new Map<string, string>(GPU_CATALOGUE.map((m) => [m.name, metricText(m)]));

/** What a chosen metric shows: its title and unit, or the name itself (a variable, a name not in the catalogue). */
const metricLabel = (name: string) => CATALOGUE.get(name) ?? name;

/**
 * What the metric is, for the menu: the catalogue's description goes on to sources and caveats.
 * Its first sentence, and of a long one the part before the first "; ", ": " or " (" past the
 * opening words.
 */
export function shortDescription(text = ''): string {
  const sentence = text.split(/(?<=\.)\s/)[0];
  if (sentence.length <= 80) {
    return sentence;
  }
  const cut = sentence.slice(30).search(/; |: | \(/);
  return cut < 0 ? sentence : sentence.slice(0, 30 + cut);
}

const metricOptions = (metrics: CatalogueEntry[] | null): Array<ComboboxOption<string>> =>
  (metrics ?? []).map((m) => ({
    value: m.name,
    label: metricText(m),
    description: [m.name, shortDescription(m.description)].filter(Boolean).join(': '),
  }));
