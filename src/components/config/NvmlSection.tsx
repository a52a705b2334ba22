import React from 'react';
import { InlineField, InlineSwitch } from '@grafana/ui';
import { LABEL_WIDTH, SectionProps, Section } from './fields';

const NVML_TOOLTIP =
  'The Local GPUs (NVML) query type: reads the GPUs of the host Grafana runs on through the NVIDIA driver’s NVML. ' +
  'Needs the linux build of the plugin and the NVIDIA driver on that host (in a container, the NVIDIA container toolkit). Off by default.';

/** The backend reads nvmlEnabled as a JSON boolean only; a provisioning file may hold "true". */
const nvmlError = (v: unknown) =>
  v === undefined || typeof v === 'boolean'
    ? undefined
    : 'Not true or false: Local GPUs queries fail until the switch stores a boolean';

/** Local GPUs through NVML: off unless switched on. */
export function NvmlSection({ jsonData, onChange, open }: SectionProps) {
  return (
    <Section
      title="Local GPUs (NVML)"
      summary="Read the GPUs of the host Grafana runs on, through the NVIDIA driver. Off by default."
      open={open}
    >
      <InlineField
        label="Read local GPUs"
        labelWidth={LABEL_WIDTH}
        tooltip={NVML_TOOLTIP}
        invalid={Boolean(nvmlError(jsonData.nvmlEnabled))}
        error={nvmlError(jsonData.nvmlEnabled)}
      >
        <InlineSwitch
          aria-label="Read local GPUs"
          value={jsonData.nvmlEnabled === true}
          onChange={(e) => onChange({ nvmlEnabled: e.currentTarget.checked ? true : undefined })}
        />
      </InlineField>
    </Section>
  );
}
