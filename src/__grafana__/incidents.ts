import { readFileSync } from 'fs';
import { join } from 'path';

import type { DashboardPanel } from './page/dashboard';

/** The GPU incident dashboard as shipped. */
export const incidentsDashboard: { panels: DashboardPanel[] } = JSON.parse(
  readFileSync(join(__dirname, '..', '..', 'dashboards', 'hsi-gpu-incidents.json'), 'utf8')
);

/** One of its panels, by title. */
export function incidentsPanel(title: string): DashboardPanel {
  const p = incidentsDashboard.panels.find((q) => q.title === title && q.type !== 'row');
  if (!p) {
    throw new Error(`hsi-gpu-incidents.json has no panel "${title}"`);
  }
  return p;
}

/** How many rows of a frame's columns share each key (the columns' values joined by " / "). */
export function countBy(columns: unknown[][]): Record<string, number> {
  const out: Record<string, number> = {};
  for (let i = 0; i < (columns[0]?.length ?? 0); i++) {
    const key = columns.map((c) => String(c[i])).join(' / ');
    out[key] = (out[key] ?? 0) + 1;
  }
  return out;
}
