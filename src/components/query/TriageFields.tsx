import React from 'react';
import { InlineField, InlineFieldRow, RadioButtonGroup } from '@grafana/ui';

import { TRIAGE_CLASSES, TRIAGE_VIEWS } from '../../generated/vocabulary';
import { TriageClass, TriageView } from '../../types';
import { GpuFilterFields, oneOf, withText } from './GpuFields';
import { FieldsProps } from './SelectorFields';
import { LABEL_WIDTH, MultiPicker, stringOptions } from './fields';

const VIEWS = withText<TriageView>(TRIAGE_VIEWS, {
  failures: { label: 'Failures', description: 'One row per failure, newest first' },
  requests: { label: 'Requests', description: 'The failed requests' },
  signals: { label: 'Signals', description: 'What each class reads, and what would add a missing signal' },
});

/** The failure classes of runbook 002 as the picker shows them (pkg/models/triage_query.go). */
const CLASSES = withText<TriageClass>(TRIAGE_CLASSES, {
  containerOOM: {
    label: 'Container OOM kill',
    description: 'The kubelet killed a container for its memory limit (host memory)',
  },
  cudaOOM: { label: 'CUDA OOM while serving', description: "A request's span failed with a CUDA allocation error" },
  cudaOOMLoad: { label: 'CUDA OOM at model load', description: 'A CUDA allocation error while loading a model' },
  xid: { label: 'XID error', description: 'The driver reported an XID error on a GPU' },
  ecc: { label: 'Uncorrectable ECC', description: 'Uncorrectable (double-bit) ECC errors on a GPU' },
  rowRemap: { label: 'Row-remap failure', description: 'A row-remap failure, or uncorrectable remapped rows' },
  pcieReplay: { label: 'PCIe replays', description: "PCIe replays rising on a GPU's link" },
  memoryEnvelope: {
    label: 'Memory envelope',
    description: 'A GPU near its framebuffer limit while allocations fail or its pods restart',
  },
});

const CLASS_LABELS = new Map<string, string>(CLASSES.map((c) => [c.value, c.label]));

/** What a chosen class shows: its label, or the value itself (a variable). */
const classLabel = (value: string) => CLASS_LABELS.get(value) ?? value;

/**
 * GPU incidents (triage): the view, the failure classes and the trace services searched for
 * failed requests, then the GPU filters, which scope every class.
 */
export function TriageFields(props: FieldsProps) {
  const { query, update, datasource } = props;
  return (
    <>
      <InlineFieldRow>
        <InlineField label="View" labelWidth={LABEL_WIDTH}>
          <RadioButtonGroup<TriageView>
            aria-label="View"
            options={VIEWS}
            value={query.view === undefined ? 'failures' : oneOf(TRIAGE_VIEWS, query.view)}
            onChange={(view) => update({ view })}
          />
        </InlineField>
      </InlineFieldRow>
      <InlineFieldRow>
        <MultiPicker
          label="Classes"
          labelWidth={LABEL_WIDTH}
          value={query.classes}
          labelOf={classLabel}
          placeholder="All classes"
          tooltip="The failure classes to list; none chosen: all"
          load={async () => CLASSES}
          // A typed value is a variable: the backend checks the classes once it is replaced.
          onChange={(classes) => update({ classes: classes as TriageClass[] | undefined })}
        />
        <MultiPicker
          label="Services"
          value={query.services}
          placeholder="All services"
          tooltip="The services searched in the trace store for failed requests (CUDA OOM); none chosen: every service"
          load={async () => stringOptions(await datasource.getTraceServices())}
          onChange={(services) => update({ services })}
        />
      </InlineFieldRow>
      <GpuFilterFields {...props} />
    </>
  );
}
