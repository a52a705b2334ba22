import React from 'react';
import { InlineFieldRow } from '@grafana/ui';
import { CADVISOR_LABEL_ROLES, CADVISOR_METRICS } from '../../generated/vocabulary';
import { labelNameError, metricNameError } from '../validation';
import { SettingsProps, TextSetting, KeyValueList, asRecord } from './fields';

export const CONTAINER_KEYS = ['cadvisorMetricNames', 'cadvisorLabelNames'] as const;

/** What each role of jsonData.cadvisorLabelNames carries, and the kubelet's own label for it. */
const ROLE_TEXT: Record<(typeof CADVISOR_LABEL_ROLES)[number], { label: string; kubelet: string }> = {
  namespace: { label: 'Namespace', kubelet: 'namespace' },
  pod: { label: 'Pod', kubelet: 'pod (older kubelets: pod_name)' },
  container: { label: 'Container', kubelet: 'container (older kubelets: container_name)' },
};

/**
 * cAdvisor's CPU series of a span's container (CPU throttling by its limit): other metric and
 * label names, where the cluster's Prometheus holds them under recording-rule or relabelled names.
 * Part of the request join's settings: it is how a span meets its container's series.
 */
export function ContainerNames({ jsonData, onChange }: SettingsProps) {
  const labels = asRecord(jsonData.cadvisorLabelNames);
  return (
    <>
      <KeyValueList
        label="cAdvisor metrics"
        tooltip="Read one of cAdvisor's CPU series from another metric, e.g. a recording rule's copy. It must be the same kind of series: a counter for the _total names, the container spec's gauge for the others. Without an entry the plugin reads cAdvisor's own name."
        name="cAdvisor metric"
        keyPlaceholder="container_cpu_cfs_throttled_periods_total"
        valuePlaceholder="my:throttled_periods_total"
        keyOptions={CADVISOR_METRICS}
        keyError={(k) => ((CADVISOR_METRICS as readonly string[]).includes(k) ? undefined : 'Not a cAdvisor series the plugin reads')}
        valueError={metricNameError}
        addLabel="Add metric"
        value={jsonData.cadvisorMetricNames}
        onChange={(v) => onChange({ cadvisorMetricNames: v })}
      />
      <InlineFieldRow>
        {CADVISOR_LABEL_ROLES.map((role) => (
          <TextSetting
            key={role}
            label={`${ROLE_TEXT[role].label} name label`}
            width={16}
            tooltip={`The label of cAdvisor's series that carries the Kubernetes ${role}, where relabelling renamed it. Leave empty for the kubelet's: ${ROLE_TEXT[role].kubelet}. A label set here is tried first.`}
            placeholder="auto"
            value={labels[role]}
            error={labelNameError(labels[role])}
            onChange={(v) => {
              const next = { ...labels, [role]: v };
              if (v === undefined) {
                delete next[role];
              }
              onChange({ cadvisorLabelNames: Object.keys(next).length ? next : undefined });
            }}
          />
        ))}
      </InlineFieldRow>
    </>
  );
}
