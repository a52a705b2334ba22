import React, { useState } from 'react';
import { InlineFieldRow } from '@grafana/ui';

import { DEFAULT_ALLOC_TYPE, DEFAULT_PROFILE_TYPE } from '../types';
import { TraceIdField } from './RequestFields';
import { FieldsProps, ProfileTypeField } from './SelectorFields';
import { LABEL_WIDTH, Picker, stringOptions } from './fields';
import { traceIdError } from './validation';

/**
 * The request-level join of one trace: its ID (typed, $trace_id, or picked from a Jaeger service's
 * slowest traces) and the profile types read for each span's CPU and allocations.
 */
export function TraceFields(props: FieldsProps) {
  const { query, update, datasource, from, to } = props;
  // Only narrows the slow-trace picker: the query itself is the trace ID.
  const [service, setService] = useState<string>();

  return (
    <>
      <InlineFieldRow>
        <Picker
          label="Service"
          labelWidth={LABEL_WIDTH}
          value={service}
          placeholder="To list its traces"
          tooltip="A Jaeger service, to list its slowest recent traces under Slow traces; not part of the query"
          width={28}
          load={async () => stringOptions(await datasource.getTraceServices())}
          onChange={setService}
        />
        <TraceIdField
          value={query.traceId}
          service={service}
          tooltip="The request: every span of this trace, across services"
          validate={traceIdError}
          onChange={(traceId) => update({ traceId })}
          datasource={datasource}
          from={from}
          to={to}
        />
      </InlineFieldRow>
      <InlineFieldRow>
        <ProfileTypeField {...props} field="profileTypeId" label="CPU profile" fallback={DEFAULT_PROFILE_TYPE} />
        <ProfileTypeField {...props} field="allocTypeId" label="Allocations" fallback={DEFAULT_ALLOC_TYPE} />
      </InlineFieldRow>
    </>
  );
}
