import React from 'react';
import { InlineFieldRow } from '@grafana/ui';
import { GpuThresholds } from '../../types';
import {
  GPU_THRESHOLD_WINDOW_RANGE as WINDOWS,
  GPU_THRESHOLD_WINDOWS,
  GPU_THRESHOLDS,
} from '../../generated/vocabulary';
import { windowError } from '../validation';
import { LABEL_WIDTH, SectionProps, Section, Note, TextSetting, NumberSetting, asRecord } from './fields';

interface ThresholdDef {
  key: keyof GpuThresholds;
  label: string;
  tooltip: string;
  default: number | string;
  /** Numbers: their valid range; windows have none (windowError). */
  range?: { min: number; max: number; minOpen?: boolean };
}

type NumericThreshold = keyof typeof GPU_THRESHOLDS;

type WindowThreshold = keyof typeof GPU_THRESHOLD_WINDOWS;

/** A numeric threshold's default and range, from the backend's (src/generated/vocabulary.ts). */
const numeric = (key: NumericThreshold) => {
  const { default: value, min, max, minOpen } = GPU_THRESHOLDS[key];
  return { key, default: value, range: { min, max, minOpen } };
};

const window = (key: WindowThreshold) => ({ key, default: GPU_THRESHOLD_WINDOWS[key].default });

const dflt = (key: NumericThreshold | WindowThreshold) =>
  key in GPU_THRESHOLDS
    ? GPU_THRESHOLDS[key as NumericThreshold].default
    : GPU_THRESHOLD_WINDOWS[key as WindowThreshold].default;

/** gpuThresholds keys in pairs, one row each; defaults and ranges are the backend's. */
export const THRESHOLD_ROWS: ThresholdDef[][] = [
  [
    {
      ...numeric('computeBoundPct'),
      label: 'Compute-bound above %',
      tooltip: `A GPU is compute-bound when its compute (SM active, else GPU utilisation) is above this percentage and its memory bandwidth below the next one. Default ${dflt('computeBoundPct')}.`,
    },
    {
      ...numeric('computeBoundMaxMemoryPct'),
      label: 'and memory below %',
      tooltip: `Memory bandwidth a compute-bound GPU stays under, in percent. Default ${dflt('computeBoundMaxMemoryPct')}.`,
    },
  ],
  [
    {
      ...numeric('memoryBoundPct'),
      label: 'Memory-bound above %',
      tooltip: `A GPU is memory-bound when its memory bandwidth is above this percentage and its compute below the next one. Default ${dflt('memoryBoundPct')}.`,
    },
    {
      ...numeric('memoryBoundMaxComputePct'),
      label: 'and compute below %',
      tooltip: `Compute a memory-bound GPU stays under, in percent. Default ${dflt('memoryBoundMaxComputePct')}.`,
    },
  ],
  [
    {
      ...numeric('thermalTempC'),
      label: 'Thermal above °C',
      tooltip: `When the exporter does not report why clocks were lowered: a GPU hotter than this whose SM clock is under the ratio next to it of its recent maximum is thermal-throttled. Default ${dflt('thermalTempC')}.`,
    },
    {
      ...numeric('thermalClockRatio'),
      label: 'and clock below ×max',
      tooltip: `The SM clock as a share of its maximum over the max-clock window (0 to 1). Default ${dflt('thermalClockRatio')}.`,
    },
  ],
  [
    {
      ...numeric('pcieBoundLinkShare'),
      label: 'PCIe-bound above ×link',
      tooltip: `A GPU is PCIe-bound when the busier transfer direction is above this share of the link's capacity (generation × lanes, in GPU series) while compute and memory are not high. 0 to 1; default ${dflt('pcieBoundLinkShare')}.`,
    },
    {
      ...numeric('idleBelowPct'),
      label: 'Idle below %',
      tooltip: `Compute below this percentage is low utilisation. Default ${dflt('idleBelowPct')}.`,
    },
  ],
  [
    {
      ...numeric('dramActivePeak'),
      label: 'DRAM active peak',
      tooltip: `DCGM's DRAM-active figure tops out near 0.8 in practice; it is divided by this to read as memory bandwidth in percent. 0 to 1; default ${dflt('dramActivePeak')}.`,
    },
  ],
  [
    {
      ...window('clockMaxWindow'),
      label: 'Max-clock window',
      tooltip: `How far back the SM clock's maximum (the clock the thermal check expects) is taken: ${WINDOWS.minText} to ${WINDOWS.maxText}. Throttling longer than this stops being seen. Default ${dflt('clockMaxWindow')}.`,
    },
    {
      ...window('shareWindow'),
      label: 'Share window',
      tooltip: `The window of the share of time each GPU spends in each class, as alerts compare it: ${WINDOWS.minText} to ${WINDOWS.maxText}. Default ${dflt('shareWindow')}.`,
    },
  ],
];

export function ThresholdsSection({ jsonData, onChange, open }: SectionProps) {
  const th = asRecord(jsonData.gpuThresholds);
  const set = (key: keyof GpuThresholds, v: number | string | undefined) => {
    const next: GpuThresholds = { ...th, [key]: v };
    if (v === undefined) {
      delete next[key];
    }
    onChange({ gpuThresholds: Object.keys(next).length ? next : undefined });
  };
  return (
    <Section
      title="GPU classification thresholds"
      summary="When a GPU counts as compute-, memory- or PCIe-bound, throttled or idle."
      open={open}
    >
      <Note>
        Empty fields keep the defaults. The provisioned Prometheus recording rules use the defaults: re-render them
        after a change.
      </Note>
      {THRESHOLD_ROWS.map((row) => (
        <InlineFieldRow key={row[0].key}>
          {row.map((d, i) => {
            const common = {
              label: d.label,
              tooltip: d.tooltip,
              placeholder: String(d.default),
              labelWidth: LABEL_WIDTH,
            };
            return d.range ? (
              <NumberSetting
                key={d.key}
                {...common}
                value={th[d.key] as number | undefined}
                range={d.range}
                onChange={(v) => set(d.key, v)}
              />
            ) : (
              <TextSetting
                key={d.key}
                {...common}
                width={12}
                value={th[d.key] as string | undefined}
                error={windowError(th[d.key] as string | undefined)}
                onChange={(v) => set(d.key, v)}
              />
            );
          })}
        </InlineFieldRow>
      ))}
    </Section>
  );
}
