import React from 'react';
import { dateTimeFormat, dateTimeFormatTimeAgo } from '@grafana/data';
import { ComboboxOption, InlineField, InlineFieldRow, RadioButtonGroup } from '@grafana/ui';

import { KERNELS_VIEWS } from '../../generated/vocabulary';
import { KernelFile, KernelsView } from '../../types';
import { oneOf, withText } from './GpuFields';
import { FieldsProps } from './SelectorFields';
import { LABEL_WIDTH, Picker, TextField } from './fields';
import { traceIdError } from '../validation';

/** What each trace file is shown as (pkg/models/kernels_query.go); the first is the default. */
const VIEWS = withText<KernelsView>(KERNELS_VIEWS, {
  summary: {
    label: 'Summary',
    description: 'Kernel summary, temporal and stream-idle breakdowns, launch statistics, copies and advice',
  },
  launches: {
    label: 'Launches',
    description:
      "Per kernel and launch call: API, queue and kernel time (nsys's cuda_kern_exec_sum); ranges projected onto the GPU work they launched (nvtx_gpu_proj_sum)",
  },
  criticalPath: {
    label: 'Critical path',
    description:
      "CPU-bound, GPU-bound, or waiting on synchronisation or copies: the critical path of the GPU work (HTA's lightweight critical path), its composition and longest segments",
  },
  timeline: {
    label: 'Timeline',
    description: "Kernels, copies, calls and annotations as a trace: open it in Explore's trace view",
  },
});

/** A file size for the picker's descriptions. */
function size(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB'];
  let v = bytes;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${u === 0 ? v : v.toFixed(1)} ${units[u]}`;
}

/** When a file was last written, in the dashboard user's time zone, and how long ago. */
const written = (modified: string) =>
  `written ${dateTimeFormat(modified, { format: 'YYYY-MM-DD HH:mm' })} (${dateTimeFormatTimeAgo(modified)})`;

export const fileOption = (f: KernelFile): ComboboxOption<string> => ({
  value: f.file,
  label: f.file,
  description: [
    // A bucket's objects are listed without their size (it is read when one is opened).
    f.size > 0 ? size(f.size) : '',
    written(f.modified),
    f.traceIds.length ? `${f.traceIds.length === 1 ? 'trace' : 'traces'} ${f.traceIds.join(', ')}` : '',
  ]
    .filter(Boolean)
    .join(' · '),
});

/**
 * GPU kernels: the view, then the request's trace ID (its traces are found by name or content in
 * the configured trace directories, by name in the buckets), or one trace file picked from the
 * kernel-files resource.
 */
export function KernelFields({ query, update, datasource }: FieldsProps) {
  return (
    <>
      <InlineFieldRow>
        <InlineField label="View" labelWidth={LABEL_WIDTH}>
          <RadioButtonGroup<KernelsView>
            aria-label="View"
            options={VIEWS}
            value={query.view === undefined ? 'summary' : oneOf(KERNELS_VIEWS, query.view)}
            onChange={(view) => update({ view })}
          />
        </InlineField>
      </InlineFieldRow>
      <InlineFieldRow>
        <TextField
          label="Trace ID"
          labelWidth={LABEL_WIDTH}
          value={query.traceId}
          width={36}
          placeholder="$trace_id"
          tooltip="The request whose GPU kernel traces to read: files naming this trace ID, else files whose annotations or metadata name it"
          validate={traceIdError}
          onCommit={(t) => update({ traceId: t.trim() || undefined })}
        />
        <Picker
          label="File"
          value={query.file}
          placeholder="Found by trace ID"
          tooltip="One trace file, relative to a configured trace directory, or a bucket object (bucket:<name>/<key>); it takes precedence over the trace ID"
          width={48}
          clearable
          load={async () => (await datasource.getKernelFiles(query.traceId)).map(fileOption)}
          onChange={(file) => update({ file: file || undefined })}
        />
      </InlineFieldRow>
    </>
  );
}
