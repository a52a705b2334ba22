import React, { ReactNode, useId, useState } from 'react';
import { css } from '@emotion/css';
import { GrafanaTheme2 } from '@grafana/data';
import {
  Collapse,
  Combobox,
  ComboboxOption,
  InlineField,
  InlineSwitch,
  Input,
  MultiCombobox,
  Stack,
  useStyles2,
} from '@grafana/ui';

/** The first column's labels (8 px each): "Label selector" and its tooltip icon fit on one line. */
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
  labelWidth?: number | 'auto';
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
  const messageClass = useStyles2(getMessageStyles);
  return (
    <InlineField
      label={label}
      labelWidth={labelWidth ?? LABEL_WIDTH}
      grow={rest.grow}
      tooltip={rest.tooltip}
      invalid={Boolean(error)}
      error={error}
      className={messageClass}
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
  /** Default: as wide as the label's text. */
  labelWidth?: number;
  width?: number;
  /** What is wrong with the value, shown under the field without moving the fields beside it. */
  error?: string;
  /** Written on every keystroke, without running the query. */
  onChange: (value: number | undefined) => void;
  /** Runs the query once the field loses focus. */
  onBlur: () => void;
}

export function NumberField({
  label,
  value,
  placeholder,
  tooltip,
  labelWidth,
  width,
  error,
  onChange,
  onBlur,
}: NumberFieldProps) {
  const messageClass = useStyles2(getMessageStyles);
  return (
    <InlineField
      label={label}
      labelWidth={labelWidth ?? 'auto'}
      tooltip={tooltip}
      invalid={Boolean(error)}
      error={error}
      className={messageClass}
    >
      <Input
        aria-label={label}
        type="number"
        min={0}
        width={width ?? 12}
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

interface SwitchFieldProps {
  label: string;
  value?: boolean;
  tooltip?: string;
  labelWidth?: number;
  disabled?: boolean;
  /** Off is undefined, so the field leaves the query. */
  onChange: (value: true | undefined) => void;
}

/** A labelled on/off switch for an optional flag of the query. */
export function SwitchField({ label, value, tooltip, labelWidth, disabled, onChange }: SwitchFieldProps) {
  return (
    <InlineField label={label} labelWidth={labelWidth ?? 'auto'} tooltip={tooltip} disabled={disabled}>
      <InlineSwitch
        aria-label={label}
        value={Boolean(value)}
        onChange={(e) => onChange(e.currentTarget.checked || undefined)}
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
  /** What a chosen value shows, before the menu has loaded the options (default: the value). */
  labelOf?: (value: string) => string;
  /** Fetched when the menu opens (and as the user types). */
  load: () => Promise<Array<ComboboxOption<string>>>;
  /** Undefined once the last value is removed, so the field leaves the query. */
  onChange: (values: string[] | undefined) => void;
}

/** Several values from a backend resource; values not offered (e.g. $host) can be typed. */
export function MultiPicker(props: MultiPickerProps) {
  const { label, value, placeholder, tooltip, labelWidth, labelOf, load, onChange } = props;
  const id = useId();
  const styles = useStyles2(getMultiPickerStyles);
  return (
    <InlineField
      className={styles.field}
      label={label}
      labelWidth={labelWidth ?? 'auto'}
      tooltip={tooltip}
      htmlFor={id}
    >
      <MultiCombobox<string>
        id={id}
        width="auto"
        minWidth={20}
        maxWidth={48}
        placeholder={placeholder}
        value={(value ?? []).map((v) => ({ value: v, label: labelOf?.(v) ?? v }))}
        createCustomValue
        options={async (typed) => matching(await load(), typed)}
        onChange={(opts) => onChange(opts.length ? opts.map((o) => o.value) : undefined)}
      />
    </InlineField>
  );
}

/**
 * An InlineField's error message, sized so it never moves the row's fields: Grafana's widens the
 * field to the message, pushing the fields beside it aside (or onto a new line). Here it takes no
 * width of its own; it runs past a narrow field to about 40 characters, then wraps, so it stays
 * inside the editor.
 */
export const getMessageStyles = () =>
  css({
    '& div:has(> [role="alert"])': { width: 0, minWidth: '100%' },
    '& [role="alert"]': { width: 'max-content', maxWidth: 'max(100%, 320px)' },
  });

const getMultiPickerStyles = (theme: GrafanaTheme2) => ({
  // MultiCombobox's box is as tall as its text, short of its label and the row's other fields.
  field: css({ '[class*="-input-input"]': { minHeight: theme.spacing(theme.components.height.md) } }),
});

/** Says how many: "1 span", "3 spans". */
export const count = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

interface OptionsRowProps {
  /** What is set inside, one short phrase each, shown while the row is closed. */
  summary: string[];
  /** Opens the row at first (a field inside says something is wrong). */
  startOpen?: boolean;
  children: ReactNode;
}

/**
 * The less common fields behind a collapsible "Options" row that says what they are set to, as
 * Grafana's Pyroscope query editor does (QueryOptionGroup).
 */
export function OptionsRow({ summary, startOpen = false, children }: OptionsRowProps) {
  const [isOpen, setOpen] = useState(startOpen);
  const styles = useStyles2(getOptionsStyles);
  return (
    <Collapse
      className={styles.collapse}
      isOpen={isOpen}
      onToggle={setOpen}
      label={
        <Stack gap={0} alignItems="baseline">
          <span className={styles.title}>Options</span>
          {!isOpen && (
            <span className={styles.summary}>
              {summary.map((s) => (
                <span key={s}>{s}</span>
              ))}
            </span>
          )}
        </Stack>
      }
    >
      {children}
    </Collapse>
  );
}

const getOptionsStyles = (theme: GrafanaTheme2) => ({
  // No box: the row sits in the editor like its other rows, the open fields in the same columns.
  collapse: css({
    backgroundColor: 'unset',
    border: 'unset',
    marginBottom: 0,
    '& > div:first-child': { padding: theme.spacing(0.5, 0) },
    '& > div + div': { padding: 0 },
  }),
  title: css({
    fontSize: theme.typography.bodySmall.fontSize,
    fontWeight: theme.typography.fontWeightMedium,
    whiteSpace: 'nowrap',
  }),
  summary: css({
    display: 'flex',
    flexWrap: 'wrap',
    columnGap: theme.spacing(2),
    paddingLeft: theme.spacing(2),
    color: theme.colors.text.secondary,
    fontSize: theme.typography.bodySmall.fontSize,
  }),
});

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
