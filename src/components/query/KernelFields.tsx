import React from 'react';
import { dateTimeFormat, dateTimeFormatTimeAgo } from '@grafana/data';
import { ComboboxOption, InlineField, InlineFieldRow, InlineLabel, RadioButtonGroup } from '@grafana/ui';

import { KERNELS_VIEWS } from '../../generated/vocabulary';
import { KernelBaseline, KernelFile, KernelsView } from '../../types';
import { oneOf, withText } from './GpuFields';
import { FieldsProps } from './SelectorFields';
import { LABEL_WIDTH, NumberField, Picker, TextField } from './fields';
import { kernelBaselineErrors, traceIdError } from '../validation';

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
  diff: {
    label: 'Diff',
    description: "The request's kernels against a baseline's, per request: the kernels that moved most first",
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
 * kernel-files resource, and for the diff its baseline.
 */
export function KernelFields(props: FieldsProps) {
  const { query, update, datasource } = props;
  const view = query.view === undefined ? 'summary' : oneOf(KERNELS_VIEWS, query.view);
  return (
    <>
      <InlineFieldRow>
        <InlineField label="View" labelWidth={LABEL_WIDTH}>
          <RadioButtonGroup<KernelsView>
            aria-label="View"
            options={VIEWS}
            value={view}
            onChange={(v) => update({ view: v })}
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
      {view === 'diff' && <BaselineFields {...props} />}
    </>
  );
}

/**
 * The diff's baseline: another request, or the most recent requests whose file references match
 * a glob. Empty fields take the backend's defaults (the 10 most recent requests like the target's
 * files), which the placeholders say.
 */
function BaselineFields({ query, update, runQuery }: FieldsProps) {
  const baseline: KernelBaseline = query.baseline ?? {};
  // Only the kernels baseline's fields are edited; a profile diff's (from, to, ...) stay as they are.
  const set = (patch: KernelBaseline, run = true) => {
    const next: Record<string, unknown> = { ...baseline, ...patch };
    const kept = Object.entries(next).filter(([, v]) => v !== undefined && v !== '');
    update({ baseline: kept.length ? Object.fromEntries(kept) : undefined }, run);
  };
  const errors = kernelBaselineErrors(baseline);
  return (
    <InlineFieldRow>
      <InlineLabel
        width={LABEL_WIDTH}
        tooltip="What the request's kernels are compared with: another request, or the most recent requests of its service merged; each side's figures are per request"
      >
        Baseline
      </InlineLabel>
      <TextField
        label="Trace ID"
        ariaLabel="Baseline trace ID"
        labelWidth="auto"
        width={36}
        value={baseline.traceId}
        placeholder="recent requests"
        tooltip="Another request to compare with; empty: the most recent requests"
        validate={traceIdError}
        onCommit={(t) => set({ traceId: t.trim() || undefined })}
      />
      <NumberField
        label="Recent"
        value={baseline.recent}
        placeholder="10"
        tooltip="How many of the most recent requests to merge (1 to 100); not with a trace ID"
        error={errors.recent}
        onChange={(recent) => set({ recent }, false)}
        onBlur={runQuery}
      />
      <TextField
        label="Matching"
        ariaLabel="Baseline files matching"
        labelWidth="auto"
        width={32}
        value={baseline.match}
        placeholder="the target's directory, any day"
        tooltip="A glob on the trace file references: infer_* matches file names, infer/*/infer_* whole references (bucket:<name>/... for a bucket's objects). Empty: the target's directory (a YYYY-MM-DD part standing for any day) and its file name up to the trace ID"
        validate={errors.matchError}
        onCommit={(m) => set({ match: m.trim() || undefined })}
      />
    </InlineFieldRow>
  );
}
