import { describe, expect, it } from '@jest/globals';
import { parseConfig } from '@codefleet/config';
import { pipelineSettings } from '../src/pipeline-deps.js';

describe('pipelineSettings', () => {
  it('carries the scope of config.yaml to every job (empty when unset)', () => {
    const parse = (text: string) => parseConfig(text, { env: {}, baseDir: '/tmp', hostname: 'h' }).config;
    const scoped = parse('workspace:\n  scope:\n    exclude: ["**/*.env"]\n    read: ["vendor/**"]\n');
    expect(pipelineSettings(scoped, {}).scope).toEqual({ exclude: ['**/*.env'], read: ['vendor/**'] });
    expect(pipelineSettings(parse(''), {}).scope).toEqual({ exclude: [], read: [] });
  });
});
