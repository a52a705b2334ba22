import React from 'react';

import { HsiOptions } from '../types';
import { DCGM_KEYS, DcgmSection } from './config/DcgmSection';
import { SettingsProps } from './config/fields';
import { JOIN_KEYS, JoinSection } from './config/JoinSection';
import { BucketSecretsProps } from './config/KernelBuckets';
import { NvmlSection } from './config/NvmlSection';
import { ProfilesSection } from './config/ProfilesSection';
import { SelfProfilingSection } from './config/SelfProfilingSection';
import { SLOW_KEYS, SlowRequestsSection } from './config/SlowRequestsSection';
import { ThresholdsSection } from './config/ThresholdsSection';
import { TraceDirectoriesSection } from './config/TraceDirectoriesSection';

export type { JsonPatch } from './config/fields';

/**
 * The settings beyond the upstreams, each section folded unless one of its keys is set. Every
 * field writes the jsonData key the backend reads (pkg/models/settings*.go) with its JSON type;
 * an empty field removes its key.
 */
export function SettingsSections({ jsonData, onChange, secrets }: SettingsProps & { secrets: BucketSecretsProps }) {
  const has = (...keys: Array<keyof HsiOptions>) => keys.some((k) => jsonData[k] !== undefined);
  return (
    <>
      <ProfilesSection jsonData={jsonData} onChange={onChange} open={has('minStep')} />
      <DcgmSection jsonData={jsonData} onChange={onChange} open={has(...DCGM_KEYS)} />
      <NvmlSection jsonData={jsonData} onChange={onChange} open={has('nvmlEnabled')} />
      <TraceDirectoriesSection
        jsonData={jsonData}
        onChange={onChange}
        open={has('traceDirectories', 'traceMaxFileBytes', 'traceMaxFiles', 'kernelBuckets')}
        {...secrets}
      />
      <ThresholdsSection jsonData={jsonData} onChange={onChange} open={has('gpuThresholds')} />
      <JoinSection jsonData={jsonData} onChange={onChange} open={has(...JOIN_KEYS)} />
      <SlowRequestsSection jsonData={jsonData} onChange={onChange} open={has(...SLOW_KEYS)} />
      <SelfProfilingSection jsonData={jsonData} onChange={onChange} open={has('selfProfilingUrl')} />
    </>
  );
}
