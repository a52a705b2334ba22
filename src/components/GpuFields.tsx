import React from 'react';
import { ComboboxOption, InlineField, InlineFieldRow, RadioButtonGroup } from '@grafana/ui';

import { GPU_AGGREGATIONS, GPU_LOCAL_VIEWS } from '../generated/vocabulary';
import { GpuAggregation, GpuLocalView, GpuMetric, GpuRole } from '../types';
import { FieldsProps } from './SelectorFields';
import { LABEL_WIDTH, MultiPicker, stringOptions } from './fields';

/** The GPU queries' label filters, in picker order, each with the role the backend lists it by. */
const FILTERS: Array<{
  role: GpuRole;
  field: 'hosts' | 'gpus' | 'models' | 'pods' | 'namespaces';
  label: string;
  placeholder: string;
  tooltip?: string;
}> = [
  { role: 'host', field: 'hosts', label: 'Hosts', placeholder: 'All hosts' },
  {
    role: 'gpu',
    field: 'gpus',
    label: 'GPUs',
    placeholder: 'All GPUs',
    tooltip: "Index or UUID; lists the chosen hosts' GPUs",
  },
  { role: 'model', field: 'models', label: 'Models', placeholder: 'All models' },
  { role: 'pod', field: 'pods', label: 'Pods', placeholder: 'All pods' },
  { role: 'namespace', field: 'namespaces', label: 'Namespaces', placeholder: 'All namespaces' },
];

/** What the pickers show of each aggregation and view; the values and their order are the backend's. */
type Text = { label: string; description: string };
const withText = <T extends string>(values: readonly T[], text: Record<T, Text>) =>
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
          value={query.view ?? 'devices'}
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
          placeholder="gpu_utilization"
          tooltip="DCGM exporter series, by catalogue name; none: gpu_utilization"
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
    <InlineFieldRow>
      {FILTERS.map(({ role, field, label, placeholder, tooltip }, i) => (
        <MultiPicker
          key={role}
          label={label}
          tooltip={tooltip}
          labelWidth={i === 0 ? LABEL_WIDTH : undefined}
          value={query[field]}
          placeholder={placeholder}
          load={async () =>
            stringOptions(await datasource.getGpuLabelValues(role, from, to, role === 'gpu' ? query.hosts : undefined))
          }
          onChange={(values) => update({ [field]: values })}
        />
      ))}
    </InlineFieldRow>
  );
}

const metricOptions = (metrics: GpuMetric[] | null): Array<ComboboxOption<string>> =>
  (metrics ?? []).map((m) => ({
    value: m.name,
    label: m.name,
    description: [m.description, m.unit].filter(Boolean).join(' · '),
  }));
