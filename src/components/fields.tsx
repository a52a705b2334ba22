import React, { useId, useState } from 'react';
import { Combobox, ComboboxOption, InlineField, Input, MultiCombobox } from '@grafana/ui';

export const LABEL_WIDTH = 16;

interface TextFieldProps {
  label: string;
  /** Accessible name when the visible label repeats (diff sides); defaults to label. */
  ariaLabel?: string;
  value?: string;
  /** Called on blur with the edited text, so a half-typed selector never runs. */
  onCommit: (text: string) => void;
  /** Message for the text being typed; undefined when it looks right. */
  validate?: (text: string) => string | undefined;
  placeholder?: string;
  tooltip?: string;
  width?: number;
  labelWidth?: number;
  grow?: boolean;
}

/** A labelled text input that validates as the user types and writes the query on blur. */
export function TextField({ label, ariaLabel, value = '', onCommit, validate, labelWidth, ...rest }: TextFieldProps) {
  const [draft, setDraft] = useState(value);
  // A new value from outside (another picker, a variable) replaces the draft.
  const [shown, setShown] = useState(value);
  if (value !== shown) {
    setShown(value);
    setDraft(value);
  }
  const error = validate?.(draft);
  return (
    <InlineField
      label={label}
      labelWidth={labelWidth ?? LABEL_WIDTH}
      grow={rest.grow}
      tooltip={rest.tooltip}
      invalid={Boolean(error)}
      error={error}
    >
      <Input
        aria-label={ariaLabel ?? label}
        value={draft}
        width={rest.width}
        placeholder={rest.placeholder}
        onChange={(e) => setDraft(e.currentTarget.value)}
        onBlur={() => draft !== value && onCommit(draft)}
      />
    </InlineField>
  );
}

interface NumberFieldProps {
  label: string;
  value?: number;
  placeholder: string;
  tooltip?: string;
  /** Written on every keystroke, without running the query. */
  onChange: (value: number | undefined) => void;
  /** Runs the query once the field loses focus. */
  onBlur: () => void;
}

export function NumberField({ label, value, placeholder, tooltip, onChange, onBlur }: NumberFieldProps) {
  return (
    <InlineField label={label} labelWidth={12} tooltip={tooltip}>
      <Input
        aria-label={label}
        type="number"
        min={0}
        width={12}
        placeholder={placeholder}
        value={value ?? ''}
        onChange={(e) => {
          const v = e.currentTarget.value;
          onChange(v === '' ? undefined : Number(v));
        }}
        onBlur={onBlur}
      />
    </InlineField>
  );
}

interface PickerProps {
  label: string;
  value?: string;
  placeholder?: string;
  tooltip?: string;
  width?: number;
  labelWidth?: number;
  disabled?: boolean;
  /** Shows an X that sets the value to '' (for optional fields). */
  clearable?: boolean;
  /** Fetched when the menu opens (and as the user types), so closed pickers cost nothing. */
  load: () => Promise<Array<ComboboxOption<string>>>;
  onChange: (value: string) => void;
}

/** A Combobox of options from a backend resource; typing a value not offered (e.g. $service) is allowed. */
export function Picker({
  label,
  value,
  placeholder,
  tooltip,
  width,
  labelWidth,
  disabled,
  clearable,
  load,
  onChange,
}: PickerProps) {
  const id = useId();
  return (
    <InlineField label={label} labelWidth={labelWidth ?? 'auto'} tooltip={tooltip} disabled={disabled} htmlFor={id}>
      <Combobox<string>
        id={id}
        width={width ?? 24}
        placeholder={placeholder}
        value={value || null}
        createCustomValue
        isClearable={Boolean(clearable)}
        options={async (typed) => matching(await load(), typed)}
        onChange={(o: ComboboxOption<string> | null) => onChange(o?.value ?? '')}
      />
    </InlineField>
  );
}

interface MultiPickerProps {
  label: string;
  value?: string[];
  placeholder: string;
  tooltip?: string;
  labelWidth?: number;
  /** Fetched when the menu opens (and as the user types). */
  load: () => Promise<Array<ComboboxOption<string>>>;
  /** Undefined once the last value is removed, so the field leaves the query. */
  onChange: (values: string[] | undefined) => void;
}

/** Several values from a backend resource; values not offered (e.g. $host) can be typed. */
export function MultiPicker({ label, value, placeholder, tooltip, labelWidth, load, onChange }: MultiPickerProps) {
  const id = useId();
  return (
    <InlineField label={label} labelWidth={labelWidth ?? 'auto'} tooltip={tooltip} htmlFor={id}>
      <MultiCombobox<string>
        id={id}
        width="auto"
        minWidth={24}
        maxWidth={60}
        placeholder={placeholder}
        value={value ?? []}
        createCustomValue
        options={async (typed) => matching(await load(), typed)}
        onChange={(opts) => onChange(opts.length ? opts.map((o) => o.value) : undefined)}
      />
    </InlineField>
  );
}

/** The options whose label, value or description contain the typed text. */
const matching = (options: Array<ComboboxOption<string>>, typed: string) => {
  const t = typed.toLowerCase();
  return options.filter((o) => `${o.label ?? o.value} ${o.description ?? ''}`.toLowerCase().includes(t));
};

/** Plain strings as Combobox options. */
export const stringOptions = (list?: string[] | null): Array<ComboboxOption<string>> =>
  (list ?? []).map((s) => ({ value: s, label: s }));

/** Resource errors come back as {error}; Grafana puts the body under data. */
export const errorMessage = (e: unknown, fallback: string): string => {
  const err = e as { data?: { error?: string; message?: string }; message?: string } | undefined;
  return err?.data?.error ?? err?.data?.message ?? err?.message ?? fallback;
};
