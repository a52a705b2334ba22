// force timezone to UTC to allow tests to work regardless of local timezone
// generally used by snapshots, but can affect specific tests
process.env.TZ = 'UTC';

const base = require('./.config/jest.config');
const { nodeModulesToTransform, grafanaESModules } = require('./.config/jest/utils');

module.exports = {
  // Jest configuration provided by Grafana scaffolding
  ...base,
  transform: {
    ...base.transform,
    // @grafana/data 13 pulls d3-color's ESM-only .mjs build, which the scaffold's transform skips.
    '^.+\\.mjs$': ['@swc/jest', { jsc: { parser: { syntax: 'ecmascript' } } }],
  },
  // @grafana/plugin-ui's CommonJS build requires @marcbachmann/cel-js, which ships ES modules only.
  transformIgnorePatterns: [nodeModulesToTransform([...grafanaESModules, '@marcbachmann/cel-js'])],
  // Grafana's own code on the test bed's frames: jest.grafana.config.js, after the integration tests.
  testPathIgnorePatterns: ['/node_modules/', '<rootDir>/src/__grafana__/'],
  // A test that renders Grafana's pickers takes well under a second on an idle machine and a few on
  // a loaded 2-core one (load 11-20): the limit is for a hang, not for speed.
  testTimeout: 60000,
};
