import React from 'react';
import { css } from '@emotion/css';
import { DataSourcePluginOptionsEditorProps } from '@grafana/data';
import { ConfigSection, DataSourceDescription } from '@grafana/plugin-ui';
import { config } from '@grafana/runtime';
import { Divider, InlineField, RadioButtonGroup, Stack } from '@grafana/ui';

import { HsiOptions, HsiSecureJsonData, TraceStore, UPSTREAMS, chosenTraceStore } from '../types';
import { LABEL_WIDTH } from './config/fields';
import { UpstreamSection } from './config/UpstreamSection';
import { JsonPatch, SettingsSections } from './SettingsSections';

type Props = DataSourcePluginOptionsEditorProps<HsiOptions, HsiSecureJsonData>;
type JsonKey = keyof HsiOptions;
type SecureKey = keyof HsiSecureJsonData;

const TRACE_STORES: Array<{ label: string; value: TraceStore; description: string }> = [
  { label: 'Jaeger', value: 'jaeger', description: 'Traces are read from Jaeger (its v3 or v1 query API)' },
  {
    label: 'Tempo',
    value: 'tempo',
    description: 'Traces are read from Grafana Tempo (TraceQL search, its v2 trace API)',
  },
];

/**
 * Laid out like Grafana's own data sources (@grafana/plugin-ui): a description, one section per
 * upstream (URL, tenant and timeout, with authentication and TLS folded), the trace store (Jaeger
 * or Tempo, one picked) among them, then the additional settings, each folded unless one of its
 * keys is set. Secrets go to secureJsonData.
 */
export function ConfigEditor(props: Props) {
  const { options, onOptionsChange } = props;
  const jsonData = options.jsonData ?? {};

  // A key set to undefined leaves jsonData, so the backend's default applies.
  const patched = (patch: JsonPatch) => {
    const next: Record<string, unknown> = { ...jsonData, ...patch };
    for (const [k, v] of Object.entries(patch)) {
      if (v === undefined) {
        delete next[k];
      }
    }
    return next as HsiOptions;
  };
  const patchJson = (patch: JsonPatch) => onOptionsChange({ ...options, jsonData: patched(patch) });
  const setJson = (key: JsonKey, value: unknown) => patchJson({ [key]: value });
  const setSecret = (key: SecureKey, value: string) =>
    onOptionsChange({ ...options, secureJsonData: { ...options.secureJsonData, [key]: value } });
  // Grafana forgets a secret on save when it is marked not configured and sent empty. A jsonData
  // patch that goes with it is made in the same change (two in a row would lose the first).
  const resetSecrets = (keys: SecureKey[], patch: JsonPatch = {}) =>
    onOptionsChange({
      ...options,
      jsonData: patched(patch),
      secureJsonFields: { ...options.secureJsonFields, ...Object.fromEntries(keys.map((k) => [k, false])) },
      secureJsonData: { ...options.secureJsonData, ...Object.fromEntries(keys.map((k) => [k, ''])) },
    });

  // One trace store's settings at a time; the other's stay stored, unused (the health check
  // still checks it).
  const traceStore = chosenTraceStore(jsonData);
  const traceStorePicker = (
    <InlineField
      label="Trace store"
      labelWidth={LABEL_WIDTH}
      tooltip="Where the requests' traces are read from. With both URLs set and none chosen, Jaeger is read."
    >
      <RadioButtonGroup
        aria-label="Trace store"
        options={TRACE_STORES}
        value={traceStore}
        onChange={(v) => setJson('traceStore', v)}
      />
    </InlineField>
  );

  return (
    <div className={styles.page}>
      <DataSourceDescription
        dataSourceName="HSI Profiling"
        docsLink={`${config.appSubUrl ?? ''}/plugins/hsi-profiling-datasource`}
        hasRequiredFields={false}
      />
      {UPSTREAMS.filter((u) => (u.key !== 'jaeger' && u.key !== 'tempo') || u.key === traceStore).map((u) => (
        <React.Fragment key={u.key}>
          <Divider spacing={3} />
          <UpstreamSection
            upstream={u}
            jsonData={jsonData}
            secureJsonData={options.secureJsonData ?? {}}
            secureJsonFields={options.secureJsonFields ?? {}}
            setJson={setJson}
            setSecret={setSecret}
            resetSecrets={resetSecrets}
            header={u.key === traceStore ? traceStorePicker : undefined}
          />
        </React.Fragment>
      ))}
      <Divider spacing={3} />
      <ConfigSection
        title="Additional settings"
        description="Optional: each keeps its default until you change it. A section with a setting opens by itself."
      >
        <Stack direction="column" gap={2}>
          <SettingsSections
            jsonData={jsonData}
            onChange={patchJson}
            secrets={{
              secureJsonData: options.secureJsonData ?? {},
              secureJsonFields: options.secureJsonFields ?? {},
              setSecret,
              resetSecrets,
            }}
          />
        </Stack>
      </ConfigSection>
    </div>
  );
}

const styles = {
  // As wide as Grafana's own settings pages (its Pyroscope data source, for one).
  page: css({ maxWidth: 900 }),
};
