import React, { useId, useRef, useState } from 'react';
import { ConfigSubSection } from '@grafana/plugin-ui';
import { Box, Button, IconButton, InlineField, InlineFieldRow, Input, Stack, Text } from '@grafana/ui';
import { HsiOptions } from '../../types';
import { rangeError } from '../validation';

// The building blocks every settings section uses: its collapsible frame, text, number and
// key-value fields that write one jsonData key each, and the props a section takes.

/** Every settings label is this wide (in 8 px units), as in Grafana's own settings pages. */
export const LABEL_WIDTH = 24;

/** A change to jsonData: keys set to undefined are removed, so the backend's default applies. */
export type JsonPatch = Partial<HsiOptions>;

export interface SettingsProps {
  jsonData: HsiOptions;
  onChange: (patch: JsonPatch) => void;
}

export interface SectionProps extends SettingsProps {
  open: boolean;
}

/**
 * A folded section of the additional settings (Grafana's ConfigSubSection): its title and one
 * line saying what it is for stay in sight; it opens by itself when one of its keys is set.
 */
export function Section({
  title,
  summary,
  open,
  children,
}: {
  title: string;
  summary: string;
  open: boolean;
  children: React.ReactNode;
}) {
  return (
    <ConfigSubSection title={title} description={summary} isCollapsible isInitiallyOpen={open}>
      {children}
    </ConfigSubSection>
  );
}

/** A longer explanation at the top of an open section. */
export function Note({ children }: { children: string | React.ReactElement }) {
  return (
    <Box marginBottom={2} maxWidth={100}>
      <Text color="secondary" variant="bodySmall">
        {children}
      </Text>
    </Box>
  );
}

interface TextSettingProps {
  label: string;
  tooltip: string;
  placeholder: string;
  value?: string;
  error?: string;
  width?: number;
  labelWidth?: number;
  /** Undefined when the field is emptied: the key leaves jsonData. */
  onChange: (v: string | undefined) => void;
}

export function TextSetting({
  label,
  tooltip,
  placeholder,
  value,
  error,
  width,
  labelWidth,
  onChange,
}: TextSettingProps) {
  return (
    <InlineField
      label={label}
      labelWidth={labelWidth ?? LABEL_WIDTH}
      tooltip={tooltip}
      invalid={Boolean(error)}
      error={error}
    >
      <Input
        aria-label={label}
        width={width ?? 30}
        placeholder={placeholder}
        value={value ?? ''}
        onChange={(e) => {
          const v = e.currentTarget.value;
          onChange(v.trim() === '' ? undefined : v);
        }}
      />
    </InlineField>
  );
}

interface NumberSettingProps {
  label: string;
  tooltip: string;
  placeholder: string;
  /** Provisioning files may quote numbers: "30" shows as 30. */
  value?: number | string;
  range?: { min: number; max: number; minOpen?: boolean; whole?: boolean };
  /** Shown instead of the range's message. */
  error?: string;
  labelWidth?: number;
  /** Input width in 8 px units; wide enough for the placeholder (the default). */
  width?: number;
  /** A number, or undefined when the field is emptied. */
  onChange: (v: number | undefined) => void;
}

export function NumberSetting({
  label,
  tooltip,
  placeholder,
  value,
  range,
  error,
  labelWidth,
  width,
  onChange,
}: NumberSettingProps) {
  const shown = value === undefined || value === '' ? undefined : Number(value);
  const message = (range && rangeError(shown, range)) || error;
  return (
    <InlineField
      label={label}
      labelWidth={labelWidth ?? LABEL_WIDTH}
      tooltip={tooltip}
      invalid={Boolean(message)}
      error={message}
    >
      <Input
        aria-label={label}
        type="number"
        width={width ?? 12}
        placeholder={placeholder}
        value={shown === undefined || Number.isNaN(shown) ? String(value ?? '') : shown}
        onChange={(e) => {
          const v = e.currentTarget.value;
          onChange(v.trim() === '' ? undefined : Number(v));
        }}
      />
    </InlineField>
  );
}

interface KeyValueListProps {
  label: string;
  tooltip: string;
  /** Names the rows for screen readers and tests: "metric 1 from", "metric 1 to", "Remove metric 1". */
  name: string;
  keyPlaceholder: string;
  valuePlaceholder: string;
  addLabel: string;
  /** Suggestions for the key (a datalist: other values can still be typed). */
  keyOptions?: readonly string[];
  keyError?: (key: string) => string | undefined;
  valueError?: (value: string) => string | undefined;
  value?: Record<string, string>;
  /** The rows with both sides filled in, or undefined when none is: the key leaves jsonData. */
  onChange: (v: Record<string, string> | undefined) => void;
}

interface Row {
  /** React key: the stored key for rows read from jsonData, a counter for added ones. */
  id: string;
  key: string;
  value: string;
}

/** An object from jsonData, or {} for anything else a provisioning file may hold there. */
export function asRecord<T extends object>(v: T | undefined): Partial<T> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? v : {};
}

const toRows = (v?: Record<string, string>): Row[] =>
  Object.entries(asRecord(v)).map(([key, value]) => ({ id: `stored ${key}`, key, value: String(value) }));

const toObject = (rows: Row[]) => {
  const out: Record<string, string> = {};
  for (const r of rows) {
    if (r.key.trim() !== '' && r.value.trim() !== '') {
      out[r.key.trim()] = r.value.trim();
    }
  }
  return out;
};

const sameObject = (a: Record<string, string>, b: Record<string, string>) => {
  const ka = Object.keys(a);
  return ka.length === Object.keys(b).length && ka.every((k) => b[k] === a[k]);
};

/** An editable list of key → value rows with add and remove buttons; half-filled rows are kept but not written. */
export function KeyValueList(p: KeyValueListProps) {
  const added = useRef(0);
  const [rows, setRows] = useState<Row[]>(() => toRows(p.value));
  const listId = useId();
  // What the rows would write for the stored value (trimmed, no empty sides), to compare with.
  const stored = toObject(toRows(p.value));

  // A value changed from outside (not by these rows) replaces them.
  if (!sameObject(toObject(rows), stored)) {
    setRows(toRows(p.value));
  }

  const update = (next: Row[]) => {
    setRows(next);
    const obj = toObject(next);
    if (!sameObject(obj, stored)) {
      p.onChange(Object.keys(obj).length ? obj : undefined);
    }
  };
  const duplicates = new Set(rows.map((r) => r.key.trim()).filter((k, i, all) => k !== '' && all.indexOf(k) !== i));

  return (
    <InlineField label={p.label} labelWidth={LABEL_WIDTH} tooltip={p.tooltip} useFieldset>
      <Column>
        {p.keyOptions && (
          <datalist id={listId}>
            {p.keyOptions.map((o) => (
              <option key={o} value={o} />
            ))}
          </datalist>
        )}
        {rows.map((r, i) => {
          const k = r.key.trim();
          const keyError =
            k === '' ? undefined : duplicates.has(k) ? 'Listed twice: the last one wins' : p.keyError?.(k);
          const valueError = p.valueError?.(r.value);
          const n = `${p.name} ${i + 1}`;
          return (
            <InlineFieldRow key={r.id}>
              <InlineField invalid={Boolean(keyError)} error={keyError}>
                <Input
                  aria-label={`${n} from`}
                  width={26}
                  list={p.keyOptions ? listId : undefined}
                  placeholder={p.keyPlaceholder}
                  value={r.key}
                  onChange={(e) => {
                    const key = e.currentTarget.value;
                    update(rows.map((x) => (x.id === r.id ? { ...x, key } : x)));
                  }}
                />
              </InlineField>
              <InlineField label="→" transparent invalid={Boolean(valueError)} error={valueError}>
                <Input
                  aria-label={`${n} to`}
                  width={30}
                  placeholder={p.valuePlaceholder}
                  value={r.value}
                  onChange={(e) => {
                    const value = e.currentTarget.value;
                    update(rows.map((x) => (x.id === r.id ? { ...x, value } : x)));
                  }}
                />
              </InlineField>
              <IconButton
                name="trash-alt"
                aria-label={`Remove ${n}`}
                onClick={() => update(rows.filter((x) => x.id !== r.id))}
              />
            </InlineFieldRow>
          );
        })}
        <div>
          <Button
            size="sm"
            variant="secondary"
            icon="plus"
            onClick={() => setRows([...rows, { id: `added ${added.current++}`, key: '', value: '' }])}
          >
            {p.addLabel}
          </Button>
        </div>
      </Column>
    </InlineField>
  );
}

/** InlineField passes invalid, disabled and aria props to its child; a column of several has no use for them. */
export function Column({ children }: { children: React.ReactNode }) {
  return (
    <Stack direction="column" gap={0.5} alignItems="flex-start">
      {children}
    </Stack>
  );
}
