import React from 'react';
import { InlineField, InlineFieldRow, TextArea } from '@grafana/ui';
import { TRACE_FILE_DEFAULTS } from '../../generated/vocabulary';
import { LABEL_WIDTH, SectionProps, Section, NumberSetting } from './fields';
import { BucketSecretsProps, KernelBuckets } from './KernelBuckets';

/** One absolute directory a line; only absolute paths are kept by the backend. */
function traceDirsError(dirs?: string[]): string | undefined {
  const bad = (dirs ?? []).find((d) => !d.startsWith('/') && !/^[A-Za-z]:[\\/]/.test(d));
  return bad === undefined ? undefined : `Not an absolute path: ${bad}`;
}

/**
 * GPU kernel traces: the directories and buckets where the kernels query reads PyTorch profiler
 * traces and Nsight Systems exports.
 */
export function TraceDirectoriesSection({ jsonData, onChange, open, ...secrets }: SectionProps & BucketSecretsProps) {
  const dirs = jsonData.traceDirectories;
  return (
    <Section
      title="GPU kernel traces"
      summary="Where the GPU kernels query finds PyTorch profiler traces and Nsight Systems exports: directories, buckets."
      open={open}
    >
      <InlineField
        label="Trace directories"
        labelWidth={LABEL_WIDTH}
        tooltip="Absolute directories, one a line, holding PyTorch profiler traces (*.json, *.json.gz, *.pt.trace.json) and Nsight Systems SQLite exports (*.sqlite), such as PYTORCH_PROFILE_DIR. Read only; paths never leave these directories. Empty: the GPU kernels query is off."
        invalid={Boolean(traceDirsError(dirs))}
        error={traceDirsError(dirs)}
      >
        <TextArea
          aria-label="Trace directories"
          cols={60}
          rows={3}
          placeholder="/var/lib/profiles"
          value={(dirs ?? []).join('\n')}
          onChange={(e) => {
            const list = e.currentTarget.value
              .split('\n')
              .map((d) => d.trim())
              .filter((d) => d !== '');
            onChange({ traceDirectories: list.length ? list : undefined });
          }}
        />
      </InlineField>
      <InlineFieldRow>
        <NumberSetting
          label="Max file bytes"
          tooltip={`Trace files larger than this are skipped. Default ${TRACE_FILE_DEFAULTS.maxFileBytes} (${TRACE_FILE_DEFAULTS.maxFileBytes / 2 ** 30} GiB).`}
          placeholder={String(TRACE_FILE_DEFAULTS.maxFileBytes)}
          width={18}
          value={jsonData.traceMaxFileBytes}
          range={{ min: 0, max: Number.MAX_SAFE_INTEGER, minOpen: true, whole: true }}
          onChange={(v) => onChange({ traceMaxFileBytes: v })}
        />
        <NumberSetting
          label="Max files"
          labelWidth={16}
          tooltip={`Trace files looked at per query. Default ${TRACE_FILE_DEFAULTS.maxFiles}.`}
          placeholder={String(TRACE_FILE_DEFAULTS.maxFiles)}
          value={jsonData.traceMaxFiles}
          range={{ min: 0, max: 10000000, minOpen: true, whole: true }}
          onChange={(v) => onChange({ traceMaxFiles: v })}
        />
      </InlineFieldRow>
      <KernelBuckets jsonData={jsonData} onChange={onChange} {...secrets} />
    </Section>
  );
}
