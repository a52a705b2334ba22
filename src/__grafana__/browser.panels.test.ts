// Chromium renders Grafana's flame graph and table panels on the frames the plugin returned from
// the test bed (see harness.ts).
import type { Page } from 'puppeteer-core';

import { AnswerName, Fixture } from './answers';
import { fixtures, look, text, startBrowser } from './harness';

startBrowser();

interface FrameJSON {
  schema: { name: string; fields: Array<{ name: string }> };
  data: { values: number[][] };
}

function frameOf(fixture: Fixture, index: number): FrameJSON {
  return (fixture.response.results.A.frames as unknown as FrameJSON[])[index];
}

function column(frame: FrameJSON, name: string) {
  const i = frame.schema.fields.findIndex((f) => f.name === name);
  if (i < 0) {
    throw new Error(`frame ${frame.schema.name} has no field ${name}`);
  }
  return frame.data.values[i];
}

const toNanoseconds: Record<string, number> = {
  ns: 1,
  µs: 1e3,
  ms: 1e6,
  s: 1e9,
  min: 60e9,
  mins: 60e9,
  hour: 3600e9,
  hours: 3600e9,
  day: 86400e9,
  days: 86400e9,
};

/** The total the flame graph's header prints ("11.6 s | 11.6 Bil samples (Time)"), in ns. */
async function headerTotal(page: Page) {
  const header = (await text(page)).match(/([\d.]+) (ns|µs|ms|s|mins?|hours?|days?) \| [\d.]+ ?\S* samples \(Time\)/);
  if (!header) {
    throw new Error(`no total in the flame graph's header: ${await text(page)}`);
  }
  return Number(header[1]) * toNanoseconds[header[2]];
}

/** Types symbol into the flame graph's search box and returns its top table row's cell texts. */
async function topTableRow(page: Page, symbol: string): Promise<string[]> {
  const search = (await page.$('input[placeholder="Search..."]'))!;
  await search.click();
  await page.keyboard.down('Control');
  await page.keyboard.press('KeyA');
  await page.keyboard.up('Control');
  await page.keyboard.press('Backspace');
  await search.type(symbol);
  const row = await page.waitForFunction(
    (fn) =>
      [...document.querySelectorAll('[data-testid="topTable"] [role="row"]')]
        .map((r) => [...r.querySelectorAll('[role="cell"]')].map((c) => (c as HTMLElement).innerText.trim()))
        .find((cells) => cells[1] === fn),
    { timeout: 60000 },
    symbol
  );
  return (await row.jsonValue()) as string[];
}

describe("Grafana's flame graph panel on the plugin's answers", () => {
  const ready = '[data-testid="topTable"] [role="cell"]';

  it.each<[string, AnswerName, number]>([
    ['service', 'service', 0],
    ['span', 'span', 0],
    ['request', 'request', 0],
    ['request-service-1', 'request', 1],
    ['span-aggregate', 'spanProfile', 0],
  ])('%s', async (name, answer, index) => {
    const frame = frameOf(fixtures[answer], index);
    await look(
      `flamegraph-${name}`,
      { kind: 'flamegraph', title: name, fixture: fixtures[answer], frame: index },
      ready,
      async (page) => {
        expect(await text(page)).not.toMatch(/Malformed dataFrame|An unexpected error happened|Data is missing fields/);
        // The header prints the root's total to three digits: the plugin's total.
        const total = column(frame, 'value')[0];
        expect(Math.abs((await headerTotal(page)) - total) / total).toBeLessThan(0.006);
        // The root, and for the whole request each service of its trace, are rows of the top table.
        const services = name === 'request' ? fixtures.request.profiledServices! : [];
        for (const symbol of ['total', ...services]) {
          const [, shown, , total] = await topTableRow(page, symbol);
          expect(shown).toBe(symbol);
          expect(total).toMatch(/^[\d.]+ (ns|µs|ms|s|mins?|hours?|days?)$/);
        }
      }
    );
  });

  it('diff: each side’s share of the top functions, as the diff summary says', async () => {
    const diff = frameOf(fixtures.diff, 0);
    const summary = frameOf(fixtures.diff, 1);
    await look(
      'flamegraph-diff',
      { kind: 'flamegraph', title: 'diff', fixture: fixtures.diff, frame: 0 },
      ready,
      async (page) => {
        expect(await text(page)).not.toMatch(/Malformed dataFrame|An unexpected error happened|Data is missing fields/);
        const header = await text(page);
        expect(header).toContain('Baseline');
        expect(header).toContain('Comparison');
        // Grafana draws the root as wide as both sides together.
        const total = column(diff, 'value')[0] + column(diff, 'valueRight')[0];
        expect(Math.abs((await headerTotal(page)) - total) / total).toBeLessThan(0.006);
        // The top functions of the summary, one at a time through the flame graph's search box.
        const names = column(summary, 'function') as unknown as string[];
        for (let i = 0; i < Math.min(5, names.length); i++) {
          const [, , baseline, comparison] = await topTableRow(page, names[i]);
          const shown = { name: names[i], baseline: parseFloat(baseline), comparison: parseFloat(comparison) };
          const plugin = {
            name: names[i],
            baseline: column(summary, 'baseline share')[i],
            comparison: column(summary, 'comparison share')[i],
          };
          // The table prints three significant digits.
          expect(Math.abs(shown.baseline - plugin.baseline)).toBeLessThanOrEqual(0.005 * plugin.baseline + 0.011);
          expect(Math.abs(shown.comparison - plugin.comparison)).toBeLessThanOrEqual(0.005 * plugin.comparison + 0.011);
        }
      }
    );
  });

  it('empty: says there is nothing, without an exception', async () => {
    // Grafana's panel passes data.series[0] to the flame graph whatever its length; @grafana/flamegraph
    // 13 throws on a frame without rows (its collapsing reads the root at levels[0][0]), which the
    // panel shows as "An unexpected error happened".
    await look(
      'flamegraph-empty',
      { kind: 'flamegraph', title: 'empty', fixture: fixtures.empty, frame: 0 },
      '[data-testid="scene"] section',
      async (page) => {
        await page.waitForFunction(() => /No data|\b0 samples\b|An unexpected error/.test(document.body.innerText), {
          timeout: 60000,
        });
        const shown = await text(page);
        expect(shown).not.toContain('An unexpected error happened');
        expect(shown).toMatch(/No data|\b0 samples\b/);
      }
    );
  });
});

describe("Grafana's table on the span heatmap's exemplars", () => {
  it('exemplars: the slowest span of each step, its duration in units and its trace', async () => {
    await look(
      'table-span-exemplars',
      { kind: 'table', title: 'Slowest span of each step', fixture: fixtures.spanHeatmap, frameName: 'exemplar' },
      '[data-testid="scene"] [role="table"]',
      async (page) => {
        const shown = await text(page);
        expect(shown).toContain('Duration');
        expect(shown).toContain('Trace ID');
        expect(shown).toMatch(/\b\d+(\.\d+)? ms\b/);
        expect(shown).toMatch(/[0-9a-f]{32}/);
        expect(shown).toContain('db_query');
      }
    );
  });
});

describe("Grafana's table on the trace query's verdict and breakdown", () => {
  it('verdict: the causes, ranked, with their evidence', async () => {
    await look(
      'table-verdict',
      { kind: 'table', title: 'Why was this request slow?', fixture: fixtures.trace, frameName: 'verdict' },
      '[data-testid="scene"] [role="table"]',
      async (page) => {
        const shown = await text(page);
        // The demo's slow request spends most of its time in the backend's db_query (CPU).
        expect(shown).toContain('CPU in nemotron-backend');
        expect(shown).toMatch(/span profiles saw \d+ms of CPU/);
        // Shares show as percentages (the field's unit), not as raw fractions.
        expect(shown).toMatch(/\d+(\.\d+)?%/);
        // Runbook 002's lever closes the table; the link field stays hidden.
        expect(shown).toContain('Runbook 002 lever for nemotron-backend');
        expect(shown).not.toContain('/explore?schemaVersion');
      }
    );
  });

  it('breakdown: parts in words and milliseconds', async () => {
    await look(
      'table-breakdown',
      { kind: 'table', title: 'Where the time went', fixture: fixtures.trace, frameName: 'breakdown' },
      '[data-testid="scene"] [role="table"]',
      async (page) => {
        const shown = await text(page);
        expect(shown).toContain('CPU in nemotron-backend');
        expect(shown).toMatch(/\d+(\.\d+)? ms/);
      }
    );
  });
});
