// The browser tests' harness: Chromium (Debian's package) renders the plugin's editors, its
// settings page and Grafana's panels on the frames the plugin returned from the test bed, with the
// real @grafana/ui components in Grafana's dark theme. A console error, a page exception or a
// failed request fails the test; each scene's screenshot is written for a person to look at (the
// folder is printed). Each browser.*.test.ts calls startBrowser() once.
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
/** The plugin's answers test/frames wrote, read before the tests run. */
export const fixtures = {} as Record<AnswerName, Fixture>;

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

/** Width of Grafana's page in the tests: a common laptop screen. */
export const WIDE = 1400;

/**
 * Starts the page server and Chromium before the file's tests and stops them after. Screenshots
 * of earlier runs are not removed here (the files share the folder): scripts/test.sh empties it.
 */
export function startBrowser() {
  beforeAll(setUp);
  afterAll(tearDown);
}

async function setUp() {
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
  mkdirSync(screenshots, { recursive: true });
  process.stdout.write(`[browser test] screenshots: ${screenshots}\n`);
}

async function tearDown() {
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
}

/**
 * Opens the page on one scene, waits until ready matches, leaves the screenshot, runs check on
 * the page, and fails on any console error, exception or failed request the page had.
 */
export async function look(
  name: string,
  scene: Scene,
  ready: string,
  check: (page: Page) => Promise<void>,
  width = WIDE
) {
  const page = await browser.newPage();
  await page.setViewport({ width, height: 900 });
  const problems: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') {
      problems.push(`console: ${m.text()}`);
    }
  });
  page.on('pageerror', (e) => problems.push(`exception: ${e instanceof Error ? e.message : String(e)}`));
  // A request the page's own closing cancels (an icon a hover in the check asked for) is no
  // problem of the page.
  let closing = false;
  page.on('requestfailed', (r) => {
    if (!closing) {
      problems.push(`request failed: ${r.url()} ${r.failure()?.errorText}`);
    }
  });
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
    // Icons arrive as separate requests after the first render: the screenshot waits for them,
    // within a bound (a page that keeps polling is still shot).
    await page.waitForNetworkIdle({ idleTime: 300, timeout: 10000 }).catch(() => undefined);
    await shot();
    try {
      await check(page);
    } catch (e) {
      // What the page showed when the check failed, beside the first look.
      await page.screenshot({ path: join(screenshots, `${name}.failed.png`), fullPage: true });
      throw e;
    }
    // What the check's hovers asked for arrives before the page closes, within a bound.
    await page.waitForNetworkIdle({ idleTime: 300, timeout: 5000 }).catch(() => undefined);
  } finally {
    closing = true;
    await page.close();
  }
  expect(problems).toEqual([]);
}

/** Leaves one more screenshot of the page as it is now, beside look's (name without .png). */
export const screenshot = (page: Page, name: string) =>
  page.screenshot({ path: join(screenshots, `${name}.png`), fullPage: true });

/** The scene's text as the user sees it. */
export const text = (page: Page) => page.$eval('[data-testid="scene"]', (e) => (e as HTMLElement).innerText);
