import React from 'react';
import { InlineFieldRow } from '@grafana/ui';
import { COMPUTED_GPU_METRICS, DCGM_LABEL_ROLES, GPU_METRIC_NAMES } from '../../types';
import { GPU_MAX_SERIES, PCIE_LINK } from '../../generated/vocabulary';
import { labelNameError, metricNameError } from '../validation';
import { SectionProps, Section, TextSetting, NumberSetting, KeyValueList, asRecord } from './fields';

export const DCGM_KEYS = ['gpuMaxSeries', 'dcgmMetricNames', 'dcgmLabelNames', 'pcieGeneration', 'pcieWidth'] as const;

export function DcgmSection({ jsonData, onChange, open }: SectionProps) {
  const labels = asRecord(jsonData.dcgmLabelNames);
  return (
    <Section
      title="GPU series (DCGM)"
      summary="How GPU series are read from Prometheus: how many, the PCIe link, other metric and label names."
      open={open}
    >
      <NumberSetting
        label="Series limit"
        tooltip={`Most series one GPU query returns (${GPU_MAX_SERIES.min} to ${GPU_MAX_SERIES.max}); beyond it the panel shows the first ones and a notice. Default ${GPU_MAX_SERIES.default}.`}
        placeholder={String(GPU_MAX_SERIES.default)}
        value={jsonData.gpuMaxSeries}
        range={{ min: GPU_MAX_SERIES.min, max: GPU_MAX_SERIES.max, whole: true }}
        onChange={(v) => onChange({ gpuMaxSeries: v })}
      />
      <InlineFieldRow>
        <NumberSetting
          label="PCIe generation"
          tooltip={`The PCIe generation of the GPUs' host link, ${PCIE_LINK.minGeneration} to ${PCIE_LINK.maxGeneration}. With the width it gives the link's capacity, which the PCIe-bound classification compares transfers with. Default ${PCIE_LINK.defaultGeneration}.`}
          placeholder={String(PCIE_LINK.defaultGeneration)}
          value={jsonData.pcieGeneration}
          range={{ min: PCIE_LINK.minGeneration, max: PCIE_LINK.maxGeneration, whole: true }}
          onChange={(v) => onChange({ pcieGeneration: v })}
        />
        <NumberSetting
          label="Lanes"
          labelWidth={8}
          tooltip={`The PCIe link width: ${PCIE_WIDTHS.slice(0, -1).join(', ')} or ${PCIE_WIDTHS.at(-1)} lanes. Default ${PCIE_LINK.defaultWidth}.`}
          placeholder={String(PCIE_LINK.defaultWidth)}
          value={jsonData.pcieWidth}
          error={pcieWidthError(jsonData.pcieWidth)}
          onChange={(v) => onChange({ pcieWidth: v })}
        />
      </InlineFieldRow>
      <KeyValueList
        label="Metric names"
        tooltip="Read a GPU metric from another Prometheus metric than the DCGM exporter's usual names, e.g. gpu_utilization from a recording rule. The metric must be in the same unit. Without an entry the plugin tries the known DCGM names."
        name="metric"
        keyPlaceholder="gpu_utilization"
        valuePlaceholder="DCGM_FI_DEV_GPU_UTIL"
        keyOptions={GPU_METRIC_NAMES}
        keyError={metricKeyError}
        valueError={metricNameError}
        addLabel="Add metric"
        value={jsonData.dcgmMetricNames}
        onChange={(v) => onChange({ dcgmMetricNames: v })}
      />
      <InlineFieldRow>
        {DCGM_LABEL_ROLES.map((r) => (
          <TextSetting
            key={r.role}
            label={`${r.label} label`}
            width={20}
            tooltip={`The label of the DCGM series that carries the ${r.what}. Leave empty to detect it: the plugin looks for ${r.aliases.join(', ')}.`}
            placeholder="auto"
            value={labels[r.role]}
            error={labelNameError(labels[r.role])}
            onChange={(v) => {
              const next = { ...labels, [r.role]: v };
              if (v === undefined) {
                delete next[r.role];
              }
              onChange({ dcgmLabelNames: Object.keys(next).length ? next : undefined });
            }}
          />
        ))}
      </InlineFieldRow>
    </Section>
  );
}

const PCIE_WIDTHS: readonly number[] = PCIE_LINK.widths;

const pcieWidthError = (v: number | undefined) =>
  v === undefined || PCIE_WIDTHS.includes(Number(v)) ? undefined : `One of ${PCIE_WIDTHS.join(', ')}`;

function metricKeyError(key: string): string | undefined {
  if (COMPUTED_GPU_METRICS[key]) {
    return `${key} is computed from ${COMPUTED_GPU_METRICS[key]}: rename those instead`;
  }
  return (GPU_METRIC_NAMES as readonly string[]).includes(key) ? undefined : 'Not a GPU metric of the catalogue';
}
