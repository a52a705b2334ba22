import { matcherValue, setMatcher } from './selector';

describe('setMatcher', () => {
  it.each([
    ['', 'service_name', 'api', true, '{service_name="api"}'],
    ['{}', 'env', 'prod', false, '{env="prod"}'],
    ['{env="prod"}', 'service_name', 'api', true, '{service_name="api", env="prod"}'],
    ['{service_name="api"}', 'env', 'prod', false, '{service_name="api", env="prod"}'],
    ['{service_name!="old", env="prod"}', 'service_name', 'api', true, '{service_name="api", env="prod"}'],
    ['{env=~"prod.*", region="eu"}', 'env', 'staging', false, '{env="staging", region="eu"}'],
    ['{service_name_alt="x"}', 'service_name', 'api', true, '{service_name="api", service_name_alt="x"}'],
    ['{path="a\\"b", env="x"}', 'env', 'y', false, '{path="a\\"b", env="y"}'],
    ['{}', 'path', 'say "hi"', false, '{path="say \\"hi\\""}'],
    ['{}', 'service_name', '$service', true, '{service_name="$service"}'],
  ])('%s with %s=%s', (selector, name, value, first, want) => {
    expect(setMatcher(selector, name, value, first)).toBe(want);
  });
});

describe('matcherValue', () => {
  it('reads an equality matcher only', () => {
    expect(matcherValue('{env="prod", service_name="api"}', 'service_name')).toBe('api');
    expect(matcherValue('{service_name=~"api.*"}', 'service_name')).toBeUndefined();
    expect(matcherValue('{service_name_alt="x"}', 'service_name')).toBeUndefined();
    expect(matcherValue('{path="say \\"hi\\""}', 'path')).toBe('say "hi"');
  });
});
