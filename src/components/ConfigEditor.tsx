import React from 'react';
import { DataSourcePluginOptionsEditorProps } from '@grafana/data';
import { FieldSet, InlineField, InlineSwitch, Input, RadioButtonGroup, SecretInput, SecretTextArea } from '@grafana/ui';

import { AuthKind, HsiOptions, HsiSecureJsonData, UPSTREAMS, UpstreamKey } from '../types';
import { UPSTREAM_TIMEOUT_SECONDS as TIMEOUT } from '../generated/vocabulary';
import { JsonPatch, SettingsSections } from './SettingsSections';

type Props = DataSourcePluginOptionsEditorProps<HsiOptions, HsiSecureJsonData>;
type JsonKey = keyof HsiOptions;
type SecureKey = keyof HsiSecureJsonData;

const AUTH_OPTIONS: Array<{ label: string; value: AuthKind }> = [
  { label: 'No auth', value: 'none' },
  { label: 'Basic', value: 'basic' },
  { label: 'Bearer token', value: 'bearer' },
];

const LABEL_WIDTH = 22;

/**
 * Three upstream sections, each with its own URL, auth, TLS and timeout (secrets go to
 * secureJsonData), then the collapsible sections of everything else (SettingsSections).
 */
export function ConfigEditor(props: Props) {
  const { options, onOptionsChange } = props;
  const jsonData = options.jsonData ?? {};

  // A key set to undefined leaves jsonData, so the backend's default applies.
  const patchJson = (patch: JsonPatch) => {
    const next: Record<string, unknown> = { ...jsonData, ...patch };
    for (const [k, v] of Object.entries(patch)) {
      if (v === undefined) {
        delete next[k];
      }
    }
    onOptionsChange({ ...options, jsonData: next as HsiOptions });
  };
  const setJson = (key: JsonKey, value: unknown) => patchJson({ [key]: value });
  const setSecret = (key: SecureKey, value: string) =>
    onOptionsChange({ ...options, secureJsonData: { ...options.secureJsonData, [key]: value } });
  const resetSecret = (key: SecureKey) =>
    onOptionsChange({
      ...options,
      secureJsonFields: { ...options.secureJsonFields, [key]: false },
      secureJsonData: { ...options.secureJsonData, [key]: '' },
    });
  const secretProps = (key: SecureKey) => ({
    isConfigured: Boolean(options.secureJsonFields?.[key]),
    onReset: () => resetSecret(key),
  });

  return (
    <>
      {UPSTREAMS.map((u) => (
        <UpstreamSection
          key={u.key}
          upstream={u.key}
          name={u.name}
          placeholder={u.placeholder}
          hasTenant={u.tenant}
          jsonData={jsonData}
          secureJsonData={options.secureJsonData ?? {}}
          setJson={setJson}
          setSecret={setSecret}
          secretProps={secretProps}
        />
      ))}
      <SettingsSections jsonData={jsonData} onChange={patchJson} />
      <FieldSet label="Self-profiling">
        <InlineField
          label="Push profiles to"
          labelWidth={LABEL_WIDTH}
          tooltip="Push this plugin's own CPU and memory profiles to a Pyroscope (off when empty). Samples carry the query type."
        >
          <Input
            id="selfProfilingUrl"
            aria-label="Self-profiling Pyroscope URL"
            width={50}
            placeholder="off"
            value={jsonData.selfProfilingUrl ?? ''}
            onChange={(e) => setJson('selfProfilingUrl', e.currentTarget.value)}
          />
        </InlineField>
      </FieldSet>
    </>
  );
}

interface SectionProps {
  upstream: UpstreamKey;
  name: string;
  placeholder: string;
  hasTenant: boolean;
  jsonData: HsiOptions;
  secureJsonData: HsiSecureJsonData;
  setJson: (key: JsonKey, value: unknown) => void;
  setSecret: (key: SecureKey, value: string) => void;
  secretProps: (key: SecureKey) => { isConfigured: boolean; onReset: () => void };
}

function UpstreamSection(p: SectionProps) {
  const k = p.upstream;
  const json = (suffix: string) => `${k}${suffix}` as JsonKey;
  const secure = (suffix: string) => `${k}${suffix}` as SecureKey;
  const str = (suffix: string) => (p.jsonData[json(suffix)] as string | undefined) ?? '';
  const auth = (p.jsonData[json('Auth')] as AuthKind | undefined) ?? 'none';

  return (
    <FieldSet label={p.name}>
      <InlineField
        label="URL"
        labelWidth={LABEL_WIDTH}
        tooltip={`Leave empty if you have no ${p.name}: query types that need it say so.`}
      >
        <Input
          aria-label={`${p.name} URL`}
          width={50}
          placeholder={p.placeholder}
          value={str('Url')}
          onChange={(e) => p.setJson(json('Url'), e.currentTarget.value)}
        />
      </InlineField>
      {p.hasTenant && (
        <InlineField label="Tenant (X-Scope-OrgID)" labelWidth={LABEL_WIDTH} tooltip="For multi-tenant servers.">
          <Input
            aria-label={`${p.name} tenant`}
            width={30}
            value={str('Tenant')}
            onChange={(e) => p.setJson(json('Tenant'), e.currentTarget.value)}
          />
        </InlineField>
      )}
      <InlineField label="Authentication" labelWidth={LABEL_WIDTH}>
        <RadioButtonGroup<AuthKind>
          aria-label={`${p.name} authentication`}
          options={AUTH_OPTIONS}
          value={auth}
          onChange={(v) => p.setJson(json('Auth'), v)}
        />
      </InlineField>
      {auth === 'basic' && (
        <>
          <InlineField label="User" labelWidth={LABEL_WIDTH}>
            <Input
              aria-label={`${p.name} user`}
              width={30}
              value={str('BasicAuthUser')}
              onChange={(e) => p.setJson(json('BasicAuthUser'), e.currentTarget.value)}
            />
          </InlineField>
          <InlineField label="Password" labelWidth={LABEL_WIDTH}>
            <SecretInput
              aria-label={`${p.name} password`}
              width={30}
              value={p.secureJsonData[secure('BasicAuthPassword')] ?? ''}
              onChange={(e) => p.setSecret(secure('BasicAuthPassword'), e.currentTarget.value)}
              {...p.secretProps(secure('BasicAuthPassword'))}
            />
          </InlineField>
        </>
      )}
      {auth === 'bearer' && (
        <InlineField label="Token" labelWidth={LABEL_WIDTH}>
          <SecretInput
            aria-label={`${p.name} token`}
            width={50}
            value={p.secureJsonData[secure('BearerToken')] ?? ''}
            onChange={(e) => p.setSecret(secure('BearerToken'), e.currentTarget.value)}
            {...p.secretProps(secure('BearerToken'))}
          />
        </InlineField>
      )}
      <InlineField
        label="Timeout (seconds)"
        labelWidth={LABEL_WIDTH}
        tooltip={`${TIMEOUT.min} to ${TIMEOUT.max}; default ${TIMEOUT.default}.`}
      >
        <Input
          aria-label={`${p.name} timeout`}
          type="number"
          width={12}
          placeholder={String(TIMEOUT.default)}
          value={(p.jsonData[json('TimeoutSeconds')] as number | undefined) ?? ''}
          onChange={(e) => {
            const v = e.currentTarget.value;
            p.setJson(json('TimeoutSeconds'), v === '' ? undefined : Number(v));
          }}
        />
      </InlineField>
      <InlineField label="Skip TLS verify" labelWidth={LABEL_WIDTH}>
        <InlineSwitch
          aria-label={`${p.name} skip TLS verify`}
          value={Boolean(p.jsonData[json('TlsSkipVerify')])}
          onChange={(e) => p.setJson(json('TlsSkipVerify'), e.currentTarget.checked)}
        />
      </InlineField>
      <InlineField label="TLS server name" labelWidth={LABEL_WIDTH}>
        <Input
          aria-label={`${p.name} TLS server name`}
          width={30}
          value={str('TlsServerName')}
          onChange={(e) => p.setJson(json('TlsServerName'), e.currentTarget.value)}
        />
      </InlineField>
      {(
        [
          ['TlsCACert', 'CA certificate'],
          ['TlsClientCert', 'Client certificate'],
          ['TlsClientKey', 'Client key'],
        ] as const
      ).map(([suffix, label]) => (
        <InlineField key={suffix} label={label} labelWidth={LABEL_WIDTH} tooltip="PEM">
          <SecretTextArea
            aria-label={`${p.name} ${label}`}
            cols={50}
            rows={4}
            placeholder="-----BEGIN ..."
            value={p.secureJsonData[secure(suffix)] ?? ''}
            onChange={(e) => p.setSecret(secure(suffix), e.currentTarget.value)}
            {...p.secretProps(secure(suffix))}
          />
        </InlineField>
      ))}
    </FieldSet>
  );
}
