// Chromium renders Grafana's flame graph and table panels, and the Request-Level dashboard's own
// panels, on the frames the plugin returned from the test bed (see harness.ts).
import { readFileSync } from 'fs';
import { join } from 'path';
import type { Page } from 'puppeteer-core';

import { AnswerName, Fixture } from './answers';
import { fixtures, look, text, startBrowser } from './harness';
import type { DashboardPanel } from './page/dashboard';

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

/** The Request-Level dashboard as shipped, and its panels that show the trace query's answer. */
const requestDashboard: { panels: DashboardPanel[] } = JSON.parse(
  readFileSync(join(__dirname, '..', '..', 'dashboards', 'hsi-request-level-profiling.json'), 'utf8')
);

function dashboardPanel(title: string): DashboardPanel {
  const p = requestDashboard.panels.find((q) => q.title === title);
  if (!p) {
    throw new Error(`hsi-request-level-profiling.json has no panel "${title}"`);
  }
  return p;
}

function frameNamed(fixture: Fixture, name: string): FrameJSON {
  const f = (fixture.response.results.A.frames as unknown as FrameJSON[]).find((x) => x.schema.name === name);
  if (!f) {
    throw new Error(`the answer has no frame ${name}`);
  }
  return f;
}

/** What the page shows of the answer's panels, measured in the browser. */
interface AnswerLayout {
  statText: string;
  /** The stat's text box against the box the stat panel draws in; its font size in px. */
  statOverflow: { top: number; right: number; bottom: number; left: number };
  statFontSize: number;
  headers: string[];
  tableText: string;
  /** Cells of the columns that must show their text whole whose text needs more room than they have. */
  clipped: string[];
  /** How many px the columns need beyond the table's width (the vertical scroll bar's included): 0 when all are in view. */
  sideways: { overflow: number; grid: number[]; columns: number[] };
  firstCauseCell: boolean;
  breakdownText: string;
  /** Grafana's frame picker (a combobox under the table) in the verdict's and the breakdown's panels. */
  pickers: number;
}

function measure(
  statId: number,
  tableId: number,
  breakdownId: number,
  answer: string,
  firstCause: string,
  whole: string[]
): AnswerLayout {
  const panel = (id: number) => document.querySelector<HTMLElement>(`[data-panel-id="${id}"]`)!;
  const stat = panel(statId);
  const span = [...stat.querySelectorAll<HTMLElement>('span')].find((s) => s.textContent === answer);
  let drawn: HTMLElement | null = span ?? null;
  while (drawn && drawn !== stat && !/px$/.test(drawn.style.height)) {
    drawn = drawn.parentElement;
  }
  const a = span?.getBoundingClientRect();
  const b = (drawn ?? stat).getBoundingClientRect();
  const table = panel(tableId);
  const headers = [...table.querySelectorAll<HTMLElement>('[role="columnheader"]')];
  const clipped: string[] = [];
  let firstCauseCell = false;
  for (const cell of table.querySelectorAll<HTMLElement>('[role="gridcell"]')) {
    const text = cell.innerText.trim();
    const column = headers[Number(cell.getAttribute('aria-colindex')) - 1]?.innerText.trim();
    firstCauseCell ||= text === firstCause;
    // A cell's content may overrun its box by a rounding pixel.
    if (
      whole.includes(column) &&
      (cell.scrollWidth > cell.clientWidth + 1 || cell.scrollHeight > cell.clientHeight + 1)
    ) {
      clipped.push(`${column}: ${text}`);
    }
  }
  const grid = table.querySelector<HTMLElement>('[role="grid"], [role="treegrid"]')!;
  return {
    statText: stat.innerText,
    statOverflow: a
      ? { top: b.top - a.top, right: a.right - b.right, bottom: a.bottom - b.bottom, left: b.left - a.left }
      : { top: NaN, right: NaN, bottom: NaN, left: NaN },
    statFontSize: span ? parseFloat(getComputedStyle(span).fontSize) : 0,
    headers: headers.map((h) => h.innerText.trim()),
    tableText: table.innerText,
    clipped,
    // TableNG sizes its columns to the grid less the vertical scroll bar it measured when it drew the
    // first rows: a bar that comes with later rows lies over the last column's padding.
    sideways: {
      overflow: Math.max(0, grid.scrollWidth - grid.offsetWidth),
      grid: [grid.scrollWidth, grid.clientWidth, grid.offsetWidth],
      columns: headers.map((h) => h.offsetWidth),
    },
    firstCauseCell,
    breakdownText: panel(breakdownId).innerText,
    pickers: [table, panel(breakdownId)].reduce((n, p) => n + p.querySelectorAll('[role="combobox"]').length, 0),
  };
}

describe("The Request-Level dashboard's own panels on the trace query's answer", () => {
  // Top of the dashboard as shipped: the answer in one line, how to use it, the ranked causes and
  // where the time went; each panel with its own options, field config and overrides.
  const titles = ['The answer', 'How to use this dashboard', 'Why was this request slow?', 'Where the time went'];

  it.each([1400, 960])('at %i px: the answer in one line, the causes ranked below it', async (width) => {
    const [stat, , table, breakdown] = titles.map(dashboardPanel);
    // Each table panel asks for its own part of the request; the stat reuses the verdict's.
    const verdict = frameNamed(fixtures.traceVerdict, 'verdict');
    const evidence = (column(verdict, 'evidence') as unknown as string[])[0];
    const answer = (column(verdict, 'answer') as unknown as Array<string | null>)[0];
    const firstCause = (column(verdict, 'cause') as unknown as string[])[0];
    const action = (column(verdict, 'action') as unknown as string[])[0];
    expect(answer).toContain(firstCause);
    await look(
      `dashboard-request-answer-${width}`,
      {
        kind: 'dashboard',
        panels: titles.map(dashboardPanel),
        fixture: fixtures.trace,
        answers: { [table.id]: fixtures.traceVerdict, [breakdown.id]: fixtures.traceBreakdown },
      },
      `[data-panel-id="${table.id}"] [role="gridcell"]`,
      async (page) => {
        // The columns the dashboard wraps (Cause, What to do) and the short ones show their text
        // whole; Evidence and How sure show a line, and the whole text on hover.
        const whole = ['#', 'Cause', 'Explains', 'Share', 'What to do'];
        const shown = await page.evaluate(measure, stat.id, table.id, breakdown.id, answer!, firstCause, whole);
        // The stat: the whole line, readable, inside its panel (not cut, not shrunk).
        expect(shown.statText).toContain(answer);
        expect(shown.statText).toMatch(/^\d+(\.\d+)? (ms|s|min) request: /m);
        expect(shown.statText).toContain(action);
        expect(shown.statFontSize).toBeGreaterThanOrEqual(16);
        for (const side of Object.values(shown.statOverflow)) {
          expect(side).toBeLessThanOrEqual(1);
        }
        // The table: its own frame, no frame picker under it (nor under the breakdown); the
        // columns the dashboard shows, none it hides, every column in view.
        expect(shown.pickers).toBe(0);
        expect(shown.headers).toEqual(['#', 'Cause', 'Explains', 'Share', 'Evidence', 'What to do', 'How sure']);
        expect(shown.sideways).toEqual(expect.objectContaining({ overflow: 0 }));
        expect(shown.tableText).not.toContain('/explore?schemaVersion');
        expect(shown.tableText).not.toContain(answer);
        // The first cause whole in its cell, and no cause or action cut.
        expect(shown.firstCauseCell).toBe(true);
        expect(shown.clipped).toEqual([]);
        // The demo's slow request spends most of its time in the backend's db_query (CPU).
        expect(shown.tableText).toContain('CPU in nemotron-backend');
        expect(shown.tableText).toMatch(/span profiles saw \d+ms of CPU/);
        // Shares show as percentages (the field's unit), not as raw fractions.
        expect(shown.tableText).toMatch(/\d+(\.\d+)?%/);
        // The first cause's evidence, whole: hovering its cell offers Grafana's cell inspector,
        // which opens the entire text.
        await page.hover(
          `[data-panel-id="${table.id}"] [role="row"]:nth-child(2) [role="gridcell"][aria-colindex="5"]`
        );
        await page.click(`[data-panel-id="${table.id}"] [aria-label="Inspect value"]`);
        const inspected = await page.waitForFunction(
          (text) =>
            [...document.querySelectorAll<HTMLElement>('[role="dialog"]')].find((d) => d.innerText.includes(text))
              ?.innerText,
          { timeout: 10000 },
          evidence
        );
        expect(await inspected.jsonValue()).toContain(evidence);
        // The dialog's icons (close, copy) arrive before it is closed: closing it first aborts
        // their requests, which is the test's doing, not the page's.
        await page.waitForNetworkIdle({ idleTime: 300, timeout: 5000 }).catch(() => undefined);
        await page.keyboard.press('Escape');
        // Runbook 002's lever closes the table (scrolled to: the grid draws the rows in view).
        const lever = await page.waitForFunction(
          (id) => {
            const grid = document.querySelector<HTMLElement>(
              `[data-panel-id="${id}"] [role="grid"], [data-panel-id="${id}"] [role="treegrid"]`
            )!;
            grid.scrollTop = grid.scrollHeight;
            return [...grid.querySelectorAll<HTMLElement>('[role="gridcell"]')]
              .map((c) => c.innerText.trim())
              .find((t) => t.startsWith('Runbook 002 lever'));
          },
          { timeout: 10000 },
          table.id
        );
        expect(await lever.jsonValue()).toContain('Runbook 002 lever for nemotron-backend');
        // Where the time went: parts in words and milliseconds.
        expect(shown.breakdownText).toContain('CPU in nemotron-backend');
        expect(shown.breakdownText).toMatch(/\d+(\.\d+)? ms/);
      },
      width
    );
  });

  it('without a trace ID: the answer says what to do', async () => {
    // The trace query without a trace ID is an error: the panels that reuse it get no frames.
    const stat = dashboardPanel('The answer');
    const none: Fixture = { ...fixtures.trace, response: { results: { A: { frames: [] } } } };
    await look(
      'dashboard-request-answer-no-trace-960',
      { kind: 'dashboard', panels: [stat], fixture: none },
      `[data-panel-id="${stat.id}"] span`,
      async (page) => {
        const shown = await page.$eval(`[data-panel-id="${stat.id}"]`, (e) => (e as HTMLElement).innerText);
        expect(shown).toContain(String(stat.fieldConfig!.defaults.noValue));
        expect(shown).toMatch(/trace ID/);
      },
      960
    );
  });
});

/** The overview dashboard as shipped: its "Why is it slow now?" row on the tail query's answer. */
const overviewDashboard: { panels: DashboardPanel[] } = JSON.parse(
  readFileSync(join(__dirname, '..', '..', 'dashboards', 'hsi-profiling-overview.json'), 'utf8')
);

function overviewPanel(title: string): DashboardPanel {
  const p = overviewDashboard.panels.find((q) => q.title === title);
  if (!p) {
    throw new Error(`hsi-profiling-overview.json has no panel "${title}"`);
  }
  return p;
}

/** What the page shows of the tail row's panels. */
function measureTail(statId: number, causesId: number, requestsId: number, answer: string) {
  const panel = (id: number) => document.querySelector<HTMLElement>(`[data-panel-id="${id}"]`)!;
  // The answer's text box against the box the stat panel draws in (as measure does).
  const stat = panel(statId);
  const span = [...stat.querySelectorAll<HTMLElement>('span')].find((s) => s.textContent === answer);
  let drawn: HTMLElement | null = span ?? null;
  while (drawn && drawn !== stat && !/px$/.test(drawn.style.height)) {
    drawn = drawn.parentElement;
  }
  const a = span?.getBoundingClientRect();
  const b = (drawn ?? stat).getBoundingClientRect();
  const causes = panel(causesId);
  const headers = [...causes.querySelectorAll<HTMLElement>('[role="columnheader"]')];
  const grid = causes.querySelector<HTMLElement>('[role="grid"], [role="treegrid"]')!;
  const cells = (p: HTMLElement) =>
    [...p.querySelectorAll<HTMLElement>('[role="gridcell"]')].map((c) => c.innerText.trim());
  return {
    statText: stat.innerText,
    statOverflow: a ? Math.max(b.top - a.top, a.right - b.right, a.bottom - b.bottom, b.left - a.left) : NaN,
    headers: headers.map((h) => h.innerText.trim()),
    causeCells: cells(causes),
    requestCells: cells(panel(requestsId)),
    overflow: Math.max(0, grid.scrollWidth - grid.offsetWidth),
    pickers: [causes, panel(requestsId)].reduce((n, p) => n + p.querySelectorAll('[role="combobox"]').length, 0),
  };
}

describe('The overview\'s "Why is it slow now?" row on the tail query\'s answer', () => {
  const titles = [
    'Why $endpoint is slow now',
    'Tail causes against the median',
    "The tail's requests, and the median ones they are compared with",
  ];

  it.each([1400, 960])('at %i px: the answer, the causes against the median, the requests', async (width) => {
    const [stat, causes, requests] = titles.map(overviewPanel);
    const summary = frameNamed(fixtures.tailSummary, 'tail summary');
    const answer = (column(summary, 'answer') as unknown as string[])[0];
    const ranked = frameNamed(fixtures.tailCauses, 'tail causes');
    const firstCause = (column(ranked, 'cause') as unknown as string[])[0];
    const example = (column(ranked, 'exampleTraceID') as unknown as string[])[0];
    const diagnosed = frameNamed(fixtures.tailRequests, 'tail requests');
    const traceIds = column(diagnosed, 'traceID') as unknown as string[];
    await look(
      `dashboard-overview-tail-${width}`,
      {
        kind: 'dashboard',
        panels: [stat, causes, requests],
        fixture: fixtures.tailSummary,
        answers: { [causes.id]: fixtures.tailCauses, [requests.id]: fixtures.tailRequests },
      },
      `[data-panel-id="${causes.id}"] [role="gridcell"]`,
      async (page) => {
        // The requests' panel is below the fold: the grid draws its rows once in view.
        await page.$eval(`[data-panel-id="${requests.id}"]`, (e) => e.scrollIntoView());
        await page.waitForFunction(
          (id) =>
            [...document.querySelectorAll<HTMLElement>(`[data-panel-id="${id}"] [role="gridcell"]`)].some(
              (c) => c.innerText.trim() !== ''
            ),
          { timeout: 10000 },
          requests.id
        );
        const shown = await page.evaluate(measureTail, stat.id, causes.id, requests.id, answer);
        // The answer in words, whole: the cause that makes the tail (or that none does).
        expect(answer).toMatch(/makes the tail|Nothing stands out/);
        expect(shown.statText.replace(/\s+/g, ' ')).toContain(answer.slice(0, 60));
        expect(shown.statOverflow).toBeLessThanOrEqual(1);
        // Each table its own frame, no frame picker; the dashboard's columns, not the hidden ones.
        expect(shown.pickers).toBe(0);
        // At 1400 px every column is in view (the grid draws only the columns in view).
        expect(width < 1400 ? 0 : shown.overflow).toBe(0);
        const columns = [
          '#',
          'Cause',
          'Share',
          'Time added',
          'At the median',
          'In the tail',
          'Requests',
          'First in',
          'Stands out',
          'Example',
          'Evidence',
          'Remedy',
        ];
        expect(width < 1400 ? shown.headers.slice(0, 6) : shown.headers).toEqual(
          width < 1400 ? columns.slice(0, 6) : columns
        );
        // The first cause and its example request whole; shares as percentages, times in ms.
        expect(shown.causeCells).toContain(firstCause);
        expect(shown.causeCells).toContain(example);
        expect(shown.causeCells.some((c) => /^\d+(\.\d+)?%$/.test(c))).toBe(true);
        expect(shown.causeCells.some((c) => /^\d+(\.\d+)? (ms|s)$/.test(c))).toBe(true);
        // The requests the answer rests on: the tail's and the median sample's, by trace ID.
        expect(shown.requestCells).toContain('tail');
        expect(shown.requestCells).toContain(traceIds[0]);
        // The median sample closes the table (scrolled to: the grid draws the rows in view).
        const median = await page.waitForFunction(
          (id) => {
            const grid = document.querySelector<HTMLElement>(
              `[data-panel-id="${id}"] [role="grid"], [data-panel-id="${id}"] [role="treegrid"]`
            )!;
            grid.scrollTop = grid.scrollHeight;
            return [...grid.querySelectorAll<HTMLElement>('[role="gridcell"]')].some(
              (c) => c.innerText.trim() === 'median'
            );
          },
          { timeout: 10000 },
          requests.id
        );
        expect(await median.jsonValue()).toBe(true);
      },
      width
    );
  });
});
