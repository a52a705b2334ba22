// The suites that run Grafana's own frontend code on the frames the plugin binary returned from
// the test bed (src/__grafana__): `npm run test:grafana` (the flame graph's data model, the trace
// view's reading of the kernels timeline, in jsdom)
// and `npm run test:browser` (Chromium). They need the fixtures test/frames writes, so
// scripts/test.sh runs them after the integration tests; `npm run test:ci` leaves them out.
const path = require('path');
const { nodeModulesToTransform, grafanaESModules } = require('./.config/jest/utils');
const base = require('./jest.config');

const flamegraph = path.join(__dirname, 'node_modules/@grafana/flamegraph/dist');

// testTimeout is a setting of the whole run (below), not of a project.
const { testTimeout: _, ...baseProject } = base;

const shared = {
  ...baseProject,
  testPathIgnorePatterns: ['/node_modules/'],
  moduleNameMapper: {
    ...base.moduleNameMapper,
    // @grafana/flamegraph exports only its component; its data model lives in files the package's
    // "exports" hide. The suites import their types by path and get the shipped code here.
    '/@grafana/flamegraph/dist/types/(.*)$': `${flamegraph}/cjs/$1.cjs`,
  },
  // @grafana/flamegraph draws with d3, whose parts ship as ES modules only.
  transformIgnorePatterns: [
    nodeModulesToTransform([...grafanaESModules, 'd3-[a-z-]+', 'internmap', 'delaunator', 'robust-predicates']),
  ],
};

module.exports = {
  // A loaded 2-core machine: rendering Grafana's components takes seconds, Chromium more.
  testTimeout: 120000,
  projects: [
    {
      ...shared,
      displayName: 'grafana',
      testMatch: [
        '<rootDir>/src/__grafana__/flamegraph.test.ts',
        '<rootDir>/src/__grafana__/heatmap.test.ts',
        '<rootDir>/src/__grafana__/incidents.test.ts',
        '<rootDir>/src/__grafana__/timeline.test.ts',
      ],
    },
    {
      ...shared,
      displayName: 'browser',
      testMatch: ['<rootDir>/src/__grafana__/browser.*.test.ts'],
      // Node drives Chromium; the page is the browser's, not jsdom's.
      testEnvironment: 'node',
      setupFilesAfterEnv: [],
    },
  ],
};
