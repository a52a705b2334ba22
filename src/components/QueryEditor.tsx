import React, { useEffect, useState } from 'react';
import { QueryEditorProps } from '@grafana/data';
import { Combobox, ComboboxOption, InlineField, InlineFieldRow, Input, RadioButtonGroup } from '@grafana/ui';

import { DataSource } from '../datasource';
import { DEFAULT_PROFILE_TYPE, HsiOptions, HsiQuery, ProfileType, QUERY_TYPES, QueryType } from '../types';

type Props = QueryEditorProps<DataSource, HsiQuery, HsiOptions>;

/** A query-type picker, then the fields of that type. */
export function QueryEditor({ query, onChange, onRunQuery, datasource, range }: Props) {
  const queryType = query.queryType ?? 'profile';
  const update = (patch: Partial<HsiQuery>, run = true) => {
    onChange({ ...query, ...patch });
    if (run) {
      onRunQuery();
    }
  };

  return (
    <>
      <InlineFieldRow>
        <InlineField label="Query type" labelWidth={16}>
          <RadioButtonGroup<QueryType>
            aria-label="Query type"
            options={QUERY_TYPES.map((t) => ({ value: t.value, label: t.label, description: t.description }))}
            value={queryType}
            onChange={(v) => update({ queryType: v })}
          />
        </InlineField>
      </InlineFieldRow>
      {queryType === 'profile' && (
        <ProfileFields
          query={query}
          update={update}
          datasource={datasource}
          from={range?.from.valueOf()}
          to={range?.to.valueOf()}
        />
      )}
    </>
  );
}

interface ProfileFieldsProps {
  query: HsiQuery;
  update: (patch: Partial<HsiQuery>, run?: boolean) => void;
  datasource: DataSource;
  from?: number;
  to?: number;
}

function ProfileFields({ query, update, datasource, from, to }: ProfileFieldsProps) {
  const [types, setTypes] = useState<Array<ComboboxOption<string>>>([]);
  const [typesError, setTypesError] = useState<string>();
  const [selector, setSelector] = useState(query.labelSelector ?? '{}');

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
      .catch((e) => !cancelled && setTypesError(e?.data?.error ?? e?.message ?? 'could not list profile types'));
    return () => {
      cancelled = true;
    };
  }, [datasource, from, to]);

  const profileTypeId = query.profileTypeId || DEFAULT_PROFILE_TYPE;
  const options = types.some((t) => t.value === profileTypeId)
    ? types
    : [{ value: profileTypeId, label: profileTypeId }, ...types];

  return (
    <InlineFieldRow>
      <InlineField
        label="Profile type"
        labelWidth={16}
        invalid={Boolean(typesError)}
        error={typesError}
        tooltip="Types with data in the dashboard's time range"
      >
        <Combobox<string>
          id="hsi-profile-type"
          width={40}
          options={options}
          value={profileTypeId}
          createCustomValue
          onChange={(v) => update({ profileTypeId: v.value })}
        />
      </InlineField>
      <InlineField label="Label selector" labelWidth={16} grow tooltip='e.g. {service_name="nemotron-backend"}'>
        <Input
          aria-label="Label selector"
          value={selector}
          onChange={(e) => setSelector(e.currentTarget.value)}
          onBlur={() => update({ labelSelector: selector })}
        />
      </InlineField>
      <InlineField label="Max nodes" labelWidth={12}>
        <Input
          aria-label="Max nodes"
          type="number"
          width={12}
          placeholder="16384"
          value={query.maxNodes ?? ''}
          onChange={(e) => {
            const v = e.currentTarget.value;
            update({ maxNodes: v === '' ? undefined : Number(v) }, false);
          }}
          onBlur={() => update({})}
        />
      </InlineField>
    </InlineFieldRow>
  );
}
