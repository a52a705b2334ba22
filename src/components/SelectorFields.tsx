import React, { useEffect, useId, useState } from 'react';
import { Combobox, ComboboxOption, InlineField, InlineFieldRow } from '@grafana/ui';

import { DataSource } from '../datasource';
import { DEFAULT_PROFILE_TYPE, HsiQuery, ProfileType } from '../types';
import { LABEL_WIDTH, Picker, TextField, errorMessage, stringOptions } from './fields';
import { matcherValue, setMatcher } from './selector';
import { profileTypeError, selectorError } from './validation';

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
export function SelectorFields(props: FieldsProps) {
  const { query, update, datasource, from, to } = props;
  const selector = query.labelSelector ?? '{}';
  const [label, setLabel] = useState<string>();
  const service = matcherValue(selector, 'service_name');

  return (
    <>
      <InlineFieldRow>
        <ProfileTypeField {...props} field="profileTypeId" label="Profile type" fallback={DEFAULT_PROFILE_TYPE} />
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

interface ProfileTypeProps extends FieldsProps {
  field: 'profileTypeId' | 'allocTypeId';
  label: string;
  /** Shown while the field is unset: what the backend uses then. */
  fallback: string;
}

/** Profile types with data in the dashboard's range; any other ID can be typed. */
export function ProfileTypeField({ query, update, datasource, from, to, field, label, fallback }: ProfileTypeProps) {
  const [types, setTypes] = useState<Array<ComboboxOption<string>>>([]);
  const [typesError, setTypesError] = useState<string>();
  const id = useId();

  useEffect(() => {
    let cancelled = false;
    datasource
      .getProfileTypes(from, to)
      .then((list: ProfileType[]) => {
        if (!cancelled) {
          setTypes((list ?? []).map((t) => ({ value: t.id, label: `${t.name} · ${t.sampleType}`, description: t.id })));
          setTypesError(undefined);
        }
      })
      .catch((e) => !cancelled && setTypesError(errorMessage(e, 'could not list profile types')));
    return () => {
      cancelled = true;
    };
  }, [datasource, from, to]);

  const profileTypeId = query[field] || fallback;
  const options = types.some((t) => t.value === profileTypeId)
    ? types
    : [{ value: profileTypeId, label: profileTypeId }, ...types];
  const error = typesError ?? profileTypeError(profileTypeId);

  return (
    <InlineField
      label={label}
      labelWidth={LABEL_WIDTH}
      invalid={Boolean(error)}
      error={error}
      tooltip="Types with data in the dashboard's time range"
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
