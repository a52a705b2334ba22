import React, { useEffect, useId, useState } from 'react';
import { Combobox, ComboboxOption, InlineField, InlineFieldRow, useStyles2 } from '@grafana/ui';

import { DataSource } from '../../datasource';
import { DEFAULT_PROFILE_TYPE, HsiQuery, ProfileType } from '../../types';
import { LABEL_WIDTH, Picker, TextField, errorMessage, getMessageStyles, stringOptions } from './fields';
import { matcherValue, setMatcher } from './selector';
import { profileTypeError, selectorError } from '../validation';

export interface FieldsProps {
  query: HsiQuery;
  /** Writes the query and, unless run is false, runs it. */
  update: (patch: Partial<HsiQuery>, run?: boolean) => void;
  runQuery: () => void;
  datasource: DataSource;
  from?: number;
  to?: number;
}

/** What every profile query has: a profile type and a label selector, with pickers that fill it. */
export function SelectorFields({ query, update, datasource, from, to }: FieldsProps) {
  const selector = query.labelSelector ?? '{}';
  const [label, setLabel] = useState<string>();
  const service = matcherValue(selector, 'service_name');
  const types = useProfileTypes(datasource, from, to);

  return (
    <>
      <InlineFieldRow>
        <ProfileTypeField
          query={query}
          update={update}
          types={types}
          field="profileTypeId"
          label="Profile type"
          fallback={DEFAULT_PROFILE_TYPE}
          labelWidth={LABEL_WIDTH}
        />
        <Picker
          label="Service"
          value={service}
          placeholder="Any service"
          tooltip="Sets service_name in the label selector"
          width={32}
          load={async () => stringOptions(await datasource.getServices(from, to))}
          onChange={(v) => update({ labelSelector: setMatcher(selector, 'service_name', v, true) })}
        />
      </InlineFieldRow>
      <InlineFieldRow>
        <TextField
          label="Label selector"
          value={selector}
          grow
          tooltip='e.g. {service_name="nemotron-backend", env=~"prod.*"}'
          validate={selectorError}
          onCommit={(labelSelector) => update({ labelSelector })}
        />
        <Picker
          label="Label"
          value={label}
          placeholder="Add a label"
          width={20}
          load={async () => stringOptions(await datasource.getLabelNames(selector, from, to))}
          onChange={setLabel}
        />
        <Picker
          label="="
          value={label ? matcherValue(selector, label) : undefined}
          placeholder="value"
          width={24}
          disabled={!label}
          load={async () => (label ? stringOptions(await datasource.getLabelValues(label, selector, from, to)) : [])}
          onChange={(v) => label && update({ labelSelector: setMatcher(selector, label, v) })}
        />
      </InlineFieldRow>
    </>
  );
}

/** The profile types with data in the range, as picker options, or why they could not be listed. */
export interface ProfileTypes {
  options: Array<ComboboxOption<string>>;
  error?: string;
}

/**
 * Asks the backend for the profile types of the range once for the editor: the trace editor's two
 * pickers share the answer.
 */
export function useProfileTypes(datasource: DataSource, from?: number, to?: number): ProfileTypes {
  const [types, setTypes] = useState<ProfileTypes>({ options: [] });
  useEffect(() => {
    let cancelled = false;
    datasource
      .getProfileTypes(from, to)
      .then((list: ProfileType[]) => {
        if (!cancelled) {
          setTypes({
            options: (list ?? []).map((t) => ({
              value: t.id,
              label: `${t.name} · ${t.sampleType}`,
              description: t.id,
            })),
          });
        }
      })
      .catch((e) => !cancelled && setTypes({ options: [], error: errorMessage(e, 'could not list profile types') }));
    return () => {
      cancelled = true;
    };
  }, [datasource, from, to]);
  return types;
}

interface ProfileTypeProps {
  query: HsiQuery;
  update: FieldsProps['update'];
  types: ProfileTypes;
  field: 'profileTypeId' | 'allocTypeId';
  label: string;
  /** Shown while the field is unset: what the backend uses then. */
  fallback: string;
  labelWidth?: number;
  /** Default: where the options come from. */
  tooltip?: string;
}

/** Profile types with data in the dashboard's range; any other ID can be typed. */
export function ProfileTypeField(props: ProfileTypeProps) {
  const { query, update, types, field, label, fallback, labelWidth, tooltip } = props;
  const id = useId();
  const messageClass = useStyles2(getMessageStyles);
  const profileTypeId = query[field] || fallback;
  const options = types.options.some((t) => t.value === profileTypeId)
    ? types.options
    : [{ value: profileTypeId, label: profileTypeId }, ...types.options];
  const error = types.error ?? profileTypeError(profileTypeId);

  return (
    <InlineField
      label={label}
      labelWidth={labelWidth ?? 'auto'}
      invalid={Boolean(error)}
      error={error}
      className={messageClass}
      tooltip={tooltip ?? "Types with data in the dashboard's time range"}
      htmlFor={id}
    >
      <Combobox<string>
        id={id}
        width={40}
        options={options}
        value={profileTypeId}
        createCustomValue
        onChange={(v) => update({ [field]: v.value })}
      />
    </InlineField>
  );
}
