import React from 'react';
import {
  Box,
  Button,
  InlineField,
  InlineFieldRow,
  InlineSwitch,
  Input,
  RadioButtonGroup,
  SecretInput,
  SecretTextArea,
  Stack,
  Text,
} from '@grafana/ui';

import { BucketCredential, BucketProvider, HsiSecureJsonData, KernelBucket } from '../../types';
import { JsonPatch, LABEL_WIDTH, Note, SectionProps } from './fields';

type SecureKey = keyof HsiSecureJsonData;

export interface BucketSecretsProps {
  secureJsonData: HsiSecureJsonData;
  secureJsonFields: Record<string, boolean>;
  setSecret: (key: SecureKey, value: string) => void;
  resetSecrets: (keys: SecureKey[], patch?: JsonPatch) => void;
}

/** The backend's bound on jsonData.kernelBuckets. */
export const MAX_BUCKETS = 16;

const PROVIDERS: Array<{ label: string; value: BucketProvider }> = [
  { label: 'S3', value: 's3' },
  { label: 'GCS', value: 'gcs' },
  { label: 'Azure', value: 'azure' },
  { label: 'Filesystem', value: 'filesystem' },
];

/** Each provider's credentials, with their labels. */
const CREDENTIALS: Record<BucketProvider, Array<{ key: BucketCredential; label: string }>> = {
  s3: [
    { key: 'accessKey', label: 'Access key' },
    { key: 'secretKey', label: 'Secret key' },
  ],
  gcs: [{ key: 'serviceAccount', label: 'Service account' }],
  azure: [{ key: 'storageAccountKey', label: 'Account key' }],
  filesystem: [],
};

export const secretKey = (name: string, credential: BucketCredential): SecureKey =>
  `kernelBucket.${name}.${credential}`;

/** What the backend would refuse of one bucket (pkg/models/settings_buckets.go), or undefined. */
export function bucketError(b: KernelBucket, all: KernelBucket[]): string | undefined {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/.test(b.name ?? '')) {
    return 'A name of letters, digits, . _ - (at most 63), starting with a letter or digit';
  }
  if (all.filter((o) => o.name === b.name).length > 1) {
    return `Another bucket is named ${b.name}`;
  }
  const t = b.timeoutSeconds;
  if (t !== undefined && !(Number.isInteger(t) && t >= 1 && t <= 300)) {
    return 'Timeout: seconds from 1 to 300';
  }
  if (b.provider === 'filesystem') {
    return b.directory?.startsWith('/') ? undefined : 'The filesystem provider needs an absolute directory';
  }
  if (!b.bucket?.trim()) {
    return b.provider === 'azure' ? 'Set the container' : 'Set the bucket';
  }
  if (b.provider === 'azure' && !b.account?.trim()) {
    return 'Set the storage account';
  }
  return undefined;
}

/** A list from jsonData, or [] for anything else a provisioning file may hold there. */
const asList = (v: unknown): KernelBucket[] => (Array.isArray(v) ? v : []);

/**
 * GPU kernel traces in buckets, in the kernel traces' section below the directories: S3 (or an
 * S3-compatible store), GCS, Azure Blob, or a directory standing in for one. Credentials go to
 * secureJsonData as kernelBucket.<name>.<credential>.
 */
export function KernelBuckets({
  jsonData,
  onChange,
  ...secrets
}: Pick<SectionProps, 'jsonData' | 'onChange'> & BucketSecretsProps) {
  const list = asList(jsonData.kernelBuckets);
  const write = (next: KernelBucket[]) => onChange({ kernelBuckets: next.length ? next : undefined });
  const update = (i: number, patch: Partial<KernelBucket>) => {
    const next = list.map((b, j) => (j === i ? { ...b, ...patch } : b));
    for (const [k, v] of Object.entries(patch)) {
      if (v === undefined || v === '' || v === false) {
        delete (next[i] as unknown as Record<string, unknown>)[k];
      }
    }
    write(next);
  };
  const remove = (i: number) => {
    const b = list[i];
    const next = list.filter((_, j) => j !== i);
    const keys = CREDENTIALS[b.provider]?.map((c) => secretKey(b.name, c.key)) ?? [];
    secrets.resetSecrets(keys, { kernelBuckets: next.length ? next : undefined });
  };
  return (
    <>
      <Box marginTop={2}>
        <Text element="h6">Buckets</Text>
      </Box>
      <Note>
        Name each upload for its request (the trace ID in the object name) under a prefix per service and day: a
        request&apos;s traces are then found in a cached listing of the bucket, never by downloading objects.
        Credentials are stored encrypted; set them after the bucket&apos;s name (renaming a bucket forgets them).
      </Note>
      <Stack direction="column" gap={2}>
        {list.map((b, i) => {
          const n = i + 1;
          const error = bucketError(b, list);
          return (
            <div key={i} aria-label={`bucket ${n}`}>
              <InlineFieldRow>
                <InlineField label="Name" labelWidth={LABEL_WIDTH} invalid={Boolean(error)} error={error}>
                  <Input
                    aria-label={`bucket ${n} name`}
                    width={20}
                    value={b.name ?? ''}
                    onChange={(e) => update(i, { name: e.currentTarget.value.trim() })}
                  />
                </InlineField>
                {/* Its own box: a name's error under the field must not stretch the buttons. */}
                <div style={{ alignSelf: 'flex-start' }}>
                  <RadioButtonGroup<BucketProvider>
                    aria-label={`bucket ${n} provider`}
                    options={PROVIDERS}
                    value={b.provider}
                    onChange={(provider) => update(i, { provider })}
                  />
                </div>
                <Button
                  variant="secondary"
                  icon="trash-alt"
                  aria-label={`Remove bucket ${n}`}
                  onClick={() => remove(i)}
                />
              </InlineFieldRow>
              {b.provider === 'filesystem' ? (
                <BucketText
                  n={n}
                  label="Directory"
                  value={b.directory}
                  placeholder="/srv/traces"
                  onChange={(directory) => update(i, { directory })}
                />
              ) : (
                <BucketText
                  n={n}
                  label={b.provider === 'azure' ? 'Container' : 'Bucket'}
                  value={b.bucket}
                  placeholder="gpu-traces"
                  onChange={(bucket) => update(i, { bucket })}
                />
              )}
              <InlineFieldRow>
                <BucketText
                  n={n}
                  label="Prefix"
                  value={b.prefix}
                  placeholder="kernels"
                  onChange={(prefix) => update(i, { prefix })}
                />
                <InlineField
                  label="Timeout (seconds)"
                  tooltip="One listing, or opening one object, may take this long. Default 30."
                >
                  <Input
                    aria-label={`bucket ${n} timeout`}
                    type="number"
                    width={10}
                    placeholder="30"
                    value={b.timeoutSeconds ?? ''}
                    onChange={(e) => {
                      const v = e.currentTarget.value.trim();
                      update(i, { timeoutSeconds: v === '' ? undefined : Number(v) });
                    }}
                  />
                </InlineField>
              </InlineFieldRow>
              {(b.provider === 's3' || b.provider === 'azure') && (
                <BucketText
                  n={n}
                  label="Endpoint"
                  value={b.endpoint}
                  placeholder={b.provider === 's3' ? 's3.amazonaws.com or seaweedfs:8333' : 'blob.core.windows.net'}
                  onChange={(endpoint) => update(i, { endpoint })}
                />
              )}
              {b.provider === 's3' && (
                <InlineFieldRow>
                  <BucketText
                    n={n}
                    label="Region"
                    value={b.region}
                    placeholder="us-east-1"
                    onChange={(region) => update(i, { region })}
                  />
                  <InlineField label="Plain HTTP" tooltip="An on-premises store without TLS">
                    <InlineSwitch
                      aria-label={`bucket ${n} plain HTTP`}
                      value={Boolean(b.insecure)}
                      onChange={(e) => update(i, { insecure: e.currentTarget.checked })}
                    />
                  </InlineField>
                </InlineFieldRow>
              )}
              {b.provider === 'azure' && (
                <BucketText
                  n={n}
                  label="Storage account"
                  value={b.account}
                  placeholder="mystorage"
                  onChange={(account) => update(i, { account })}
                />
              )}
              {(CREDENTIALS[b.provider] ?? []).map((c) => {
                const key = secretKey(b.name, c.key);
                const props = {
                  'aria-label': `bucket ${n} ${c.label.toLowerCase()}`,
                  value: secrets.secureJsonData[key] ?? '',
                  isConfigured: Boolean(secrets.secureJsonFields[key]),
                  onReset: () => secrets.resetSecrets([key]),
                };
                return (
                  <InlineField key={c.key} label={c.label} labelWidth={LABEL_WIDTH}>
                    {c.key === 'serviceAccount' ? (
                      <SecretTextArea
                        {...props}
                        cols={60}
                        rows={3}
                        onChange={(e) => secrets.setSecret(key, e.currentTarget.value)}
                      />
                    ) : (
                      <SecretInput
                        {...props}
                        width={40}
                        onChange={(e) => secrets.setSecret(key, e.currentTarget.value)}
                      />
                    )}
                  </InlineField>
                );
              })}
            </div>
          );
        })}
        {list.length < MAX_BUCKETS && (
          <div>
            <Button
              variant="secondary"
              icon="plus"
              onClick={() => write([...list, { name: `bucket${list.length + 1}`, provider: 's3' }])}
            >
              Add bucket
            </Button>
          </div>
        )}
      </Stack>
    </>
  );
}

function BucketText({
  n,
  label,
  value,
  placeholder,
  onChange,
}: {
  n: number;
  label: string;
  value?: string;
  placeholder: string;
  onChange: (v: string) => void;
}) {
  return (
    <InlineField label={label} labelWidth={LABEL_WIDTH}>
      <Input
        aria-label={`bucket ${n} ${label.toLowerCase()}`}
        width={40}
        placeholder={placeholder}
        value={value ?? ''}
        onChange={(e) => onChange(e.currentTarget.value.trim())}
      />
    </InlineField>
  );
}
