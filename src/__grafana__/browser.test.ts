// Chromium (Debian's package) renders the plugin's editors, its settings page and Grafana's flame
// graph on the frames the plugin returned from the test bed, with the real @grafana/ui components in
// Grafana's dark theme. A console error, a page exception or a failed request fails the test; each
// scene's screenshot is written for a person to look at (the folder is printed).
import { build } from 'esbuild';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'fs';
import { createServer, Server } from 'http';
import { AddressInfo } from 'net';
import { tmpdir } from 'os';
import { extname, join, normalize } from 'path';
import type { Browser, Page, PuppeteerNode } from 'puppeteer-core';

import { ANSWERS, AnswerName, Fixture } from './answers';
import { readFixture } from './fixtures';
import type { Scene } from './page';
import { HsiQuery, QUERY_TYPES } from '../types';

// puppeteer-core ships ES modules only, which Jest's module loader cannot run (it also stands in
// for the 'module' builtin). Node's own require loads them (require of ES modules, Node 20.19 and
// later); process.getBuiltinModule hands out Node's real 'module'.
const nodeModule = process.getBuiltinModule('module') as typeof import('module');
const puppeteer: PuppeteerNode = nodeModule.createRequire(__filename)('puppeteer-core').default;

const root = join(__dirname, '..', '..');
const chromium = process.env.HSI_CHROMIUM || '/usr/bin/chromium';
const screenshots = process.env.HSI_SCREENSHOTS_DIR || join(root, '.testbed', 'screenshots');
const icons = join(root, 'node_modules', '@grafana', 'ui', 'dist', 'public', 'img', 'icons');

let work: string;
let server: Server;
let base: string;
let browser: Browser;
const fixtures = {} as Record<AnswerName, Fixture>;

/** Bundles the page as Grafana's webpack would: one script, the flame graph's model included. */
async function bundle(dir: string) {
  await build({
    entryPoints: [join(__dirname, 'page', 'index.tsx')],
    outfile: join(dir, 'page.js'),
    bundle: true,
    format: 'iife',
    platform: 'browser',
    target: 'chrome120',
    // Development React: its warnings reach the console and fail the test.
    define: { 'process.env.NODE_ENV': '"development"', global: 'window' },
    loader: { '.svg': 'text', '.png': 'dataurl', '.woff': 'dataurl', '.woff2': 'dataurl', '.ttf': 'dataurl' },
    logLevel: 'error',
    plugins: [
      {
        // The model's files are imported by their types' path (see jest.grafana.config.js).
        name: 'flamegraph-internals',
        setup(b) {
          b.onResolve({ filter: /@grafana\/flamegraph\/dist\/types\// }, (args) => ({
            path: join(root, 'node_modules/@grafana/flamegraph/dist/esm', args.path.split('/dist/types/')[1] + '.mjs'),
          }));
        },
      },
      {
        // @grafana/ui's .mjs files import this CommonJS package's default export; bundlers give an
        // .mjs file the whole module object there (Node's rule), not its __esModule default.
        // Grafana builds @grafana/ui from source, where the default is the component.
        name: 'commonjs-default',
        setup(b) {
          b.onResolve({ filter: /^react-custom-scrollbars-2$/ }, () => ({
            path: 'scrollbars',
            namespace: 'cjs-default',
          }));
          b.onLoad({ filter: /.*/, namespace: 'cjs-default' }, () => ({
            contents: `export { default } from './lib/index.js'; export * from './lib/index.js';`,
            resolveDir: join(root, 'node_modules/react-custom-scrollbars-2'),
          }));
        },
      },
    ],
  });
}

const types: Record<string, string> = { '.js': 'text/javascript', '.css': 'text/css', '.svg': 'image/svg+xml' };

// Grafana's server serves the Inter font its GlobalStyles ask for; no npm package ships it, so the
// page gets a system sans-serif under that name (Debian's chromium pulls in fonts-liberation).
const fonts = [
  '/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf',
  '/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf',
];

// What Grafana's index.html sets before any plugin code runs; @grafana/runtime's config reads it.
const bootData = { settings: {}, user: { theme: 'dark', lightTheme: false }, navTree: [] };

const blankIcon = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"></svg>';
const missingIcons = new Set<string>();

function serve(dir: string): Promise<Server> {
  const html = `<!doctype html><html><head><meta charset="utf-8"><link rel="icon" href="data:,">
<link rel="stylesheet" href="/page.css"><script>window.grafanaBootData = ${JSON.stringify(bootData)};</script></head>
<body><div id="root"></div><script src="/page.js"></script></body></html>`;
  const s = createServer((req, res) => {
    const path = normalize(decodeURIComponent((req.url ?? '/').split('?')[0]));
    let file: string | undefined;
    if (path === '/') {
      res.writeHead(200, { 'Content-Type': 'text/html' }).end(html);
      return;
    } else if (path.startsWith('/public/build/img/icons/')) {
      file = join(icons, path.slice('/public/build/img/icons/'.length));
      if (!existsSync(file)) {
        // Grafana's server has every Unicons icon; @grafana/ui's package ships the ones it uses
        // itself. The flame graph's others (angle-double-up, ...) get a blank one of the same size.
        missingIcons.add(path);
        res.writeHead(200, { 'Content-Type': types['.svg'] }).end(blankIcon);
        return;
      }
    } else if (path.startsWith('/public/fonts/')) {
      file = fonts.find(existsSync);
    } else if (path === '/page.js' || path === '/page.css') {
      file = join(dir, path);
    }
    if (file && existsSync(file)) {
      res
        .writeHead(200, { 'Content-Type': types[extname(file)] ?? 'application/octet-stream' })
        .end(readFileSync(file));
    } else {
      res.writeHead(404).end();
    }
  });
  return new Promise((resolve) => s.listen(0, '127.0.0.1', () => resolve(s)));
}

beforeAll(async () => {
  for (const name of ANSWERS) {
    fixtures[name] = readFixture(name);
  }
  work = mkdtempSync(join(tmpdir(), 'hsi-browser-'));
  await bundle(work);
  server = await serve(work);
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  if (!existsSync(chromium)) {
    throw new Error(`no Chromium at ${chromium}: scripts/setup.sh installs Debian's chromium package`);
  }
  browser = await puppeteer.launch({
    executablePath: chromium,
    headless: true,
    // Without the background-networking flags Chromium's own connections are refused on a closed
    // network and logged as errors.
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-dev-shm-usage',
      `--user-data-dir=${join(work, 'profile')}`,
    ],
  });
  rmSync(screenshots, { recursive: true, force: true });
  mkdirSync(screenshots, { recursive: true });
  process.stdout.write(`[browser test] screenshots: ${screenshots}\n`);
});

afterAll(async () => {
  if (missingIcons.size) {
    process.stdout.write(
      `[browser test] icons not in @grafana/ui's package, drawn blank: ${[...missingIcons].join(' ')}\n`
    );
  }
  await browser?.close();
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  if (work) {
    rmSync(work, { recursive: true, force: true });
  }
});

/**
 * Opens the page on one scene, waits until ready matches, leaves the screenshot, runs check on
 * the page, and fails on any console error, exception or failed request the page had.
 */
async function look(name: string, scene: Scene, ready: string, check: (page: Page) => Promise<void>) {
  const page = await browser.newPage();
  await page.setViewport({ width: 1400, height: 900 });
  const problems: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') {
      problems.push(`console: ${m.text()}`);
    }
  });
  page.on('pageerror', (e) => problems.push(`exception: ${e instanceof Error ? e.message : String(e)}`));
  page.on('requestfailed', (r) => problems.push(`request failed: ${r.url()} ${r.failure()?.errorText}`));
  page.on('response', (r) => {
    if (r.status() >= 400) {
      problems.push(`HTTP ${r.status()}: ${r.url()}`);
    }
  });
  const shot = () => page.screenshot({ path: join(screenshots, `${name}.png`), fullPage: true });
  try {
    await page.goto(base, { waitUntil: 'load' });
    await page.evaluate((s) => window.hsiRender(s), scene);
    try {
      await page.waitForSelector(ready, { timeout: 60000 });
    } catch (e) {
      await shot();
      throw new Error(`${name}: ${ready} never showed (${e}); problems: ${JSON.stringify(problems, null, 1)}`);
    }
    await shot();
    try {
      await check(page);
    } catch (e) {
      // What the page showed when the check failed, beside the first look.
      await page.screenshot({ path: join(screenshots, `${name}.failed.png`), fullPage: true });
      throw e;
    }
  } finally {
    await page.close();
  }
  expect(problems).toEqual([]);
}

const text = (page: Page) => page.$eval('[data-testid="scene"]', (e) => (e as HTMLElement).innerText);

describe('the query editor of each query type', () => {
  it.each(QUERY_TYPES.map((t) => [t.value, t.label]))('%s', async (queryType, label) => {
    const query = { refId: 'A', queryType } as HsiQuery;
    await look(`editor-${queryType}`, { kind: 'editor', query }, '[data-testid="scene"] input', async (page) => {
      // The first field is the query type picker, showing the type's name.
      expect(await page.$eval('[data-testid="scene"] input', (e) => (e as HTMLInputElement).value)).toBe(label);
    });
  });
});

describe('the settings page', () => {
  it('empty', async () => {
    await look('settings-empty', { kind: 'config', jsonData: {} }, 'input', async (page) => {
      const shown = await text(page);
      for (const section of ['Pyroscope', 'Prometheus', 'Jaeger']) {
        expect(shown).toContain(section);
      }
      expect(shown).not.toMatch(/A duration such as|A whole number from|Not a GPU metric/);
    });
  });

  it('filled', async () => {
    const jsonData = {
      pyroscopeUrl: 'http://pyroscope:4040',
      prometheusUrl: 'http://prometheus:9090',
      jaegerUrl: 'http://jaeger:16686',
      pyroscopeTenant: 'team-gpu',
      prometheusAuth: 'basic' as const,
      prometheusBasicAuthUser: 'grafana',
      minStep: '30s',
      gpuMaxSeries: 200,
      traceDirectories: ['/var/lib/traces'],
    };
    await look(
      'settings-filled',
      { kind: 'config', jsonData, secureJsonFields: { prometheusBasicAuthPassword: true } },
      'input',
      async (page) => {
        const values = await page.$$eval('[data-testid="scene"] input', (es) =>
          es.map((e) => (e as HTMLInputElement).value)
        );
        for (const v of [
          'http://pyroscope:4040',
          'http://prometheus:9090',
          'http://jaeger:16686',
          'team-gpu',
          'grafana',
          '30s',
          '200',
        ]) {
          expect(values).toContain(v);
        }
        expect(await text(page)).not.toMatch(/A duration such as|A whole number from/);
      }
    );
  });

  it('invalid', async () => {
    const jsonData = { pyroscopeUrl: 'http://pyroscope:4040', minStep: '5 minutes', gpuMaxSeries: 0 };
    await look('settings-invalid', { kind: 'config', jsonData }, 'input', async (page) => {
      const shown = await text(page);
      expect(shown).toContain('A duration such as 15s, 1m or 1d');
      expect(shown).toContain('A whole number from 1 to 10000');
    });
  });
});

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
