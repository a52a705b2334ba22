// Chromium renders the GPU incident dashboard's table panels as shipped
// (dashboards/hsi-gpu-incidents.json: options, field config, overrides, the table panel's
// migrations, data links interpolated as Grafana 13 does) on the triage's answers from the test
// bed (see harness.ts). The panels that reuse the Failures table's answer get their own
// transformations first, applied by @grafana/data; the bar chart panel is not on npm, so
// incidents.test.ts checks the frame it would draw instead.
import { Fixture } from './answers';
import { fixtures, look, screenshot, startBrowser } from './harness';
import { incidentsPanel } from './incidents';
import type { DashboardPanel } from './page/dashboard';
import type { Page } from 'puppeteer-core';

startBrowser();

interface FrameJSON {
  schema: { name: string; fields: Array<{ name: string }> };
  data: { values: unknown[][] };
}

function frameOf(fixture: Fixture): FrameJSON {
  const frames = fixture.response.results.A.frames as unknown as FrameJSON[];
  expect(frames).toHaveLength(1);
  return frames[0];
}

function column(frame: FrameJSON, name: string): unknown[] {
  const i = frame.schema.fields.findIndex((f) => f.name === name);
  if (i < 0) {
    throw new Error(`frame ${frame.schema.name} has no field ${name}`);
  }
  return frame.data.values[i];
}

/** One cell as the page shows it. */
interface Cell {
  /** The frame's row (the grid's aria-rowindex less the header's). */
  row: number;
  column: string;
  text: string;
  /** How its text needs more room than the cell has ("" when it fits): "w 412 > 280", "h ...". */
  clipped: string;
  links: Array<{ href: string | null; text: string }>;
  color: string;
}

/**
 * Every header and cell of a panel's table. The grid draws only the rows and columns in view:
 * it is scrolled through, a step at a time, and back.
 */
async function readGrid(panelId: number): Promise<{ headers: string[]; cells: Cell[] }> {
  const grid = document.querySelector<HTMLElement>(
    `[data-panel-id="${panelId}"] [role="grid"], [data-panel-id="${panelId}"] [role="treegrid"]`
  )!;
  const headers = new Map<number, string>();
  const cells = new Map<string, Omit<Cell, 'column'> & { col: number }>();
  const frame = () => new Promise((resolve) => requestAnimationFrame(resolve));
  for (let top = 0; ; top += Math.max(40, grid.clientHeight / 2)) {
    grid.scrollTop = top;
    for (let left = 0; ; left += Math.max(40, grid.clientWidth / 2)) {
      grid.scrollLeft = left;
      await frame();
      await frame();
      for (const h of grid.querySelectorAll<HTMLElement>('[role="columnheader"]')) {
        headers.set(Number(h.getAttribute('aria-colindex')), h.innerText.trim());
      }
      for (const c of grid.querySelectorAll<HTMLElement>('[role="gridcell"]')) {
        const row = Number(c.closest('[role="row"]')?.getAttribute('aria-rowindex')) - 2;
        const col = Number(c.getAttribute('aria-colindex'));
        cells.set(`${row}/${col}`, {
          row,
          col,
          text: c.innerText.trim(),
          // A cell's content may overrun its box by a rounding pixel.
          clipped: [
            c.scrollWidth > c.clientWidth + 1 ? `w ${c.scrollWidth} > ${c.clientWidth}` : '',
            c.scrollHeight > c.clientHeight + 1 ? `h ${c.scrollHeight} > ${c.clientHeight}` : '',
          ]
            .join(' ')
            .trim(),
          links: [...c.querySelectorAll('a')].map((a) => ({ href: a.getAttribute('href'), text: a.innerText.trim() })),
          color: getComputedStyle(c).color,
        });
      }
      if (left + grid.clientWidth >= grid.scrollWidth) {
        break;
      }
    }
    if (top + grid.clientHeight >= grid.scrollHeight) {
      break;
    }
  }
  grid.scrollTop = 0;
  grid.scrollLeft = 0;
  const order = [...headers.keys()].sort((a, b) => a - b);
  return {
    headers: order.map((i) => headers.get(i)!),
    cells: [...cells.values()].map(({ col, ...c }) => ({ ...c, column: headers.get(col) ?? `#${col}` })),
  };
}

/** The columns a table panel's overrides wrap. */
function wrapped(panel: DashboardPanel): string[] {
  return (panel.fieldConfig?.overrides ?? [])
    .filter((o) => o.properties.some((p) => p.id === 'custom.wrapText' && p.value === true))
    .map((o) => String(o.matcher.options));
}

/** The cells of one column, by frame row. */
function cellsOf(cells: Cell[], name: string): Map<number, Cell> {
  return new Map(cells.filter((c) => c.column === name).map((c) => [c.row, c]));
}

async function showPanel(
  name: string,
  panel: DashboardPanel,
  fixture: Fixture,
  check: (grid: Awaited<ReturnType<typeof readGrid>>, page: Page) => void | Promise<void>
) {
  await look(
    name,
    { kind: 'dashboard', panels: [panel], fixture },
    `[data-panel-id="${panel.id}"] [role="gridcell"]`,
    async (page) => {
      const grid = await page.evaluate(readGrid, panel.id);
      // The columns right of the view, scrolled to (the links of the Failures table are there).
      const wide = await page.$eval(`[data-panel-id="${panel.id}"] [role="grid"]`, (g) => {
        g.scrollLeft = g.scrollWidth;
        return g.scrollWidth > g.clientWidth;
      });
      if (wide) {
        await new Promise((resolve) => setTimeout(resolve, 300));
        await screenshot(page, `${name}-right`);
        await page.$eval(`[data-panel-id="${panel.id}"] [role="grid"]`, (g) => (g.scrollLeft = 0));
      }
      await check(grid, page);
    }
  );
}

describe("The GPU incident dashboard's tables on the triage's answers", () => {
  const failures = incidentsPanel('Failures');

  it.each<['triage' | 'triageDemo', string]>([
    ['triage', 'fixture-node-d: six failures, one of each class'],
    ['triageDemo', "gpu-node-1: the demo's CUDA OOM request and its pod's OOM kill"],
  ])('Failures on %s (%s)', async (answer) => {
    const frame = frameOf(fixtures[answer]);
    const rows = column(frame, 'time').length;
    if (answer === 'triage') {
      expect(rows).toBe(6);
    }
    await showPanel(`dashboard-incidents-failures-${answer}`, failures, fixtures[answer], ({ headers, cells }) => {
      // The columns the dashboard shows, in the frame's order, each once; the class id is the
      // class's name for the panels and alerts, the class column shows its title; the GPU's other
      // pods are in the evidence where they matter (gpu shared with, hidden: empty on most rows).
      expect(headers).toEqual([
        'time',
        'failure',
        'class',
        'host',
        'gpu',
        'uuid',
        'pod',
        'namespace',
        'container',
        'service',
        'operation',
        'count',
        'evidence',
        'first checks',
        'mitigation',
        'mapping',
        'gpu dashboard',
        'traces',
      ]);
      // One row per failure, each class where the frame has it.
      expect(new Set(cells.map((c) => c.row))).toEqual(new Set([...Array(rows).keys()]));
      const classes = cellsOf(cells, 'class');
      column(frame, 'class').forEach((c, i) => expect(classes.get(i)?.text).toBe(c));
      // The links: the URL the frame holds, under the dashboard's title for each.
      const gpuLinks = cellsOf(cells, 'gpu dashboard');
      const traceLinks = cellsOf(cells, 'traces');
      column(frame, 'gpu dashboard').forEach((url, i) =>
        expect(gpuLinks.get(i)?.links).toEqual(url ? [{ href: url, text: 'GPU Metrics' }] : [])
      );
      column(frame, 'traces').forEach((url, i) =>
        expect(traceLinks.get(i)?.links).toEqual(url ? [{ href: url, text: 'Traces' }] : [])
      );
      if (answer === 'triageDemo') {
        // The CUDA OOM's row opens a failed request's verdict: the newest on that GPU, which is
        // the test's own request or one another test package sent to the bed since.
        const links = [...traceLinks.values()].flatMap((c) => c.links);
        expect(links.map((l) => l.href)).toContainEqual(
          expect.stringMatching(/^\/d\/hsi-request-profiling\/[^?]*\?.*var-trace_id=[0-9a-f]{32}$/)
        );
      }
      // The columns the dashboard wraps show their text whole.
      const wraps = wrapped(failures);
      expect(wraps).toEqual(
        expect.arrayContaining(['failure', 'class', 'evidence', 'first checks', 'mitigation', 'mapping'])
      );
      expect(
        cells.filter((c) => wraps.includes(c.column) && c.clipped).map((c) => `${c.column} (${c.clipped}): ${c.text}`)
      ).toEqual([]);
      for (const name of ['evidence', 'mitigation']) {
        const shown = cellsOf(cells, name);
        column(frame, name).forEach((text, i) => expect(shown.get(i)?.text.replace(/\s+/g, ' ')).toBe(text));
      }
    });
  });

  it('Failed requests: the CUDA OOM request with its trace ID', async () => {
    const panel = incidentsPanel('Failed requests');
    const fixture = fixtures.triageRequests;
    const frame = frameOf(fixture);
    await showPanel('dashboard-incidents-requests', panel, fixture, ({ headers, cells }) => {
      expect(headers).toEqual(frame.schema.fields.map((f) => f.name));
      const ids = cellsOf(cells, 'trace ID');
      const row = [...ids.values()].find((c) => c.text === fixture.traceId);
      expect(row).toBeDefined();
      const at = (name: string) => cellsOf(cells, name).get(row!.row)?.text;
      expect(at('class')).toBe('CUDA out-of-memory while serving');
      expect(at('service')).toBe('ai-detector');
      expect(at('error')).toMatch(/^torch\.OutOfMemoryError: CUDA out of memory\./);
      expect(at('framebuffer used')).toMatch(/^\d+(\.\d+)?%$/);
      // The error wraps to its whole height. PyTorch's message ends with a documentation URL, one
      // word wider than the column: it runs past the cell's right edge (hovering shows it whole).
      expect(
        cells
          .filter((c) => wrapped(panel).includes(c.column) && /h /.test(c.clipped))
          .map((c) => `${c.column} (${c.clipped}): ${c.text}`)
      ).toEqual([]);
    });
  });

  it('Affected pods and GPUs: the failures grouped by host, GPU and pod', async () => {
    const panel = incidentsPanel('Affected pods and GPUs');
    const frame = frameOf(fixtures.triage);
    await showPanel('dashboard-incidents-pods', panel, fixtures.triage, async ({ headers, cells }, page) => {
      expect(headers).toEqual(['host', 'gpu', 'pod', 'failures', 'last failure', 'classes']);
      // Every column in view: the table does not scroll sideways.
      const overflow = await page.$eval(
        `[data-panel-id="${panel.id}"] [role="grid"]`,
        (g) => g.scrollWidth - g.clientWidth
      );
      expect(overflow).toBeLessThanOrEqual(1);
      const pods = [...cellsOf(cells, 'pod').values()];
      const rows = new Set(column(frame, 'pod').map((p, i) => `${column(frame, 'gpu')[i]} ${p}`));
      expect(pods).toHaveLength(rows.size);
      const decode1 = pods.find((c) => c.text === 'llm-decode-1')!;
      expect(cellsOf(cells, 'failures').get(decode1.row)?.text).toBe('3');
      // Most failures first.
      expect(decode1.row).toBe(0);
      expect(cellsOf(cells, 'last failure').get(decode1.row)?.text).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
      // The GPU links to GPU Metrics at that host and GPU.
      expect(cellsOf(cells, 'gpu').get(decode1.row)?.links).toEqual([
        {
          href: '/d/hsi-gpu-metrics/hsi-gpu-metrics?var-host=fixture-node-d&var-gpu=1&from=now-1h&to=now',
          text: '1',
        },
      ]);
      expect(cells.filter((c) => c.column === 'classes' && c.clipped).map((c) => c.text)).toEqual([]);
    });
  });

  it('What each class reads: each status in its colour', async () => {
    const panel = incidentsPanel('What each class reads');
    const frame = frameOf(fixtures.triageSignals);
    const mapping = panel
      .fieldConfig!.overrides.find((o) => o.matcher.options === 'status')!
      .properties.find((p) => p.id === 'mappings')!.value[0].options as Record<string, { color: string }>;
    const rgb = (hex: string) => {
      // The theme names colours in hex; the page's computed style is rgb().
      const [r, g, b] = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
      return `rgb(${r}, ${g}, ${b})`;
    };
    await showPanel('dashboard-incidents-signals', panel, fixtures.triageSignals, async ({ headers, cells }, page) => {
      expect(headers).toEqual(['class', 'signal', 'status', 'detail']);
      const statuses = cellsOf(cells, 'status');
      expect(statuses.size).toBe(column(frame, 'status').length);
      for (const [, c] of statuses) {
        expect(Object.keys(mapping)).toContain(c.text);
        const want = await page.evaluate((name) => window.hsiColorByName(name), mapping[c.text].color);
        expect([c.text, c.color]).toEqual([c.text, rgb(want)]);
      }
      expect(cells.filter((c) => c.column === 'detail' && c.clipped).map((c) => c.text)).toEqual([]);
    });
  });
});
