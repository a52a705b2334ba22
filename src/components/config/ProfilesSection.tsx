import React from 'react';
import { stepError } from '../validation';
import { SectionProps, Section, TextSetting } from './fields';

/** Profiles: the finest step of profile values over time. */
export function ProfilesSection({ jsonData, onChange, open }: SectionProps) {
  return (
    <Section title="Profiles" summary="The finest step of profile values over time." open={open}>
      <TextSetting
        label="Minimum step"
        tooltip="The finest resolution of profile values over time (Metrics and Both queries): a panel's interval below it is raised to it. As in Grafana's Pyroscope data source. Default 15s."
        placeholder="15s"
        value={jsonData.minStep}
        error={stepError(jsonData.minStep)}
        onChange={(v) => onChange({ minStep: v })}
      />
    </Section>
  );
}
