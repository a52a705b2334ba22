import React, { useId } from 'react';
import { DataSourceInstanceSettings } from '@grafana/data';
import { DataSourcePicker } from '@grafana/runtime';
import { InlineField } from '@grafana/ui';
import { TRACE_DATASOURCE_TYPES, TraceDatasourceType } from '../../types';
import { JOIN_DEFAULTS } from '../../generated/vocabulary';
import { attributeError, dashboardUidError } from '../validation';
import { LABEL_WIDTH, SectionProps, Section, TextSetting, KeyValueList } from './fields';
import { CONTAINER_KEYS, ContainerNames } from './ContainerNames';

export const JOIN_KEYS = [
  ...CONTAINER_KEYS,
  'joinHostAttribute',
  'joinGpuAttribute',
  'joinHostMap',
  'traceDatasourceUid',
  'gpuDashboardUid',
  'requestDashboardUid',
] as const;

export function JoinSection({ jsonData, onChange, open }: SectionProps) {
  const pickerId = useId();
  return (
    <Section
      title="Request join and links"
      summary="How a request's spans find their hosts, GPUs and containers, and where trace and GPU links lead."
      open={open}
    >
      <TextSetting
        label="Span host attribute"
        tooltip={`The span resource attribute that names the host a request ran on, to find its GPUs. A span attribute of that name is used when the resource lacks it. Default ${JOIN_DEFAULTS.hostAttribute}.`}
        placeholder={JOIN_DEFAULTS.hostAttribute}
        value={jsonData.joinHostAttribute}
        error={attributeError(jsonData.joinHostAttribute)}
        onChange={(v) => onChange({ joinHostAttribute: v })}
      />
      <TextSetting
        label="Span GPU attribute"
        tooltip={`The span attribute that names the GPUs a service used, by index or UUID (several separated by commas). Spans of services without it are joined to every GPU of their host. Default ${JOIN_DEFAULTS.gpuAttribute}.`}
        placeholder={JOIN_DEFAULTS.gpuAttribute}
        value={jsonData.joinGpuAttribute}
        error={attributeError(jsonData.joinGpuAttribute)}
        onChange={(v) => onChange({ joinGpuAttribute: v })}
      />
      <KeyValueList
        label="Host names"
        tooltip="When traces and DCGM name a host differently: the span's host (left) and the DCGM host label value (right). Hosts not listed are looked up by the same name."
        name="host"
        keyPlaceholder="span host"
        valuePlaceholder="DCGM host"
        addLabel="Add host"
        value={jsonData.joinHostMap}
        onChange={(v) => onChange({ joinHostMap: v })}
      />
      <ContainerNames jsonData={jsonData} onChange={onChange} />
      <InlineField
        label="Trace data source"
        labelWidth={LABEL_WIDTH}
        htmlFor={pickerId}
        tooltip="The Jaeger or Tempo data source that span links open in Explore. None: spans carry no trace link."
      >
        <DataSourcePicker
          inputId={pickerId}
          width={40}
          type={TRACE_DATASOURCE_TYPES}
          noDefault
          placeholder="None"
          current={jsonData.traceDatasourceUid ?? null}
          onChange={(ds: DataSourceInstanceSettings) =>
            onChange({
              traceDatasourceUid: ds.uid,
              traceDatasourceType: (TRACE_DATASOURCE_TYPES as string[]).includes(ds.type)
                ? (ds.type as TraceDatasourceType)
                : undefined,
            })
          }
          onClear={() => onChange({ traceDatasourceUid: undefined, traceDatasourceType: undefined })}
        />
      </InlineField>
      <TextSetting
        label="GPU dashboard UID"
        tooltip={`The dashboard that GPU links open. Default ${JOIN_DEFAULTS.gpuDashboardUid}, the GPU Metrics dashboard this plugin ships.`}
        placeholder={JOIN_DEFAULTS.gpuDashboardUid}
        value={jsonData.gpuDashboardUid}
        error={dashboardUidError(jsonData.gpuDashboardUid)}
        onChange={(v) => onChange({ gpuDashboardUid: v })}
      />
      <TextSetting
        label="Request dashboard UID"
        tooltip={`The dashboard that slow-trace links open, with the trace ID filled in. Default ${JOIN_DEFAULTS.requestDashboardUid}, the Request-Level Profiling dashboard this plugin ships.`}
        placeholder={JOIN_DEFAULTS.requestDashboardUid}
        value={jsonData.requestDashboardUid}
        error={dashboardUidError(jsonData.requestDashboardUid)}
        onChange={(v) => onChange({ requestDashboardUid: v })}
      />
    </Section>
  );
}
