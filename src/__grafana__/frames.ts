import { DataFrame } from '@grafana/data';
import { toDataQueryResponse } from '@grafana/runtime';

import { Fixture } from './answers';

/** What DataSourceWithBackend does with an answer: @grafana/runtime's toDataQueryResponse. */
export function toFrames(fixture: Fixture): DataFrame[] {
  const res = toDataQueryResponse({ data: fixture.response });
  if (res.errors?.length) {
    throw new Error(`the answer is an error: ${JSON.stringify(res.errors)}`);
  }
  return res.data as DataFrame[];
}
