// Chromium renders the plugin's settings page with @grafana/ui (see harness.ts).
import { look, text, startBrowser } from './harness';

startBrowser();

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
