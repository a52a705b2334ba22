import React from 'react';
import { InlineFieldRow } from '@grafana/ui';

import { FieldsProps } from './SelectorFields';
import { LABEL_WIDTH, Picker, TextField } from './fields';
import { traceIdError } from './validation';

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

/**
 * GPU kernels: the request's trace ID (its traces are found by name or content in the configured
 * trace directories), or one trace file picked from the kernel-files resource.
 */
export function KernelFields({ query, update, datasource }: FieldsProps) {
  return (
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
        tooltip="One trace file, relative to a configured trace directory; it takes precedence over the trace ID"
        width={48}
        clearable
        load={async () =>
          (await datasource.getKernelFiles(query.traceId)).map((f) => ({
            value: f.file,
            label: f.file,
            description: `${size(f.size)}, ${f.modified}${f.traceIds.length ? `, trace ${f.traceIds.join(', ')}` : ''}`,
          }))
        }
        onChange={(file) => update({ file: file || undefined })}
      />
    </InlineFieldRow>
  );
}
