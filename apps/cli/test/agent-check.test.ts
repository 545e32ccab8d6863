import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { parseConfig } from '@codefleet/config';
import { createTempDir, type TempDir } from '@codefleet/testkit';
import { agentReadiness, defaultAgentReadiness } from '../src/agent-check.js';

let dir: TempDir | undefined;
afterEach(async () => {
  await dir?.dispose();
  dir = undefined;
});

// A chain can run only when every tier can start: the last tier is where a hard task ends up.
describe('agent readiness of an escalation chain', () => {
  it('checks every tier, naming the chain and the tier that cannot start', async () => {
    dir = await createTempDir('agent-check');
    await writeFile(join(dir.path, 'agent.mjs'), '');
    const load = (chains: string) => {
      const text = [
        'agents:',
        '  script: { module: ./agent.mjs }',
        '  profiles:',
        '    scripted: { agent: script }',
        '    cloud: { agent: claude, model: x }',
        `  ${chains}`,
        '',
      ].join('\n');
      const { config } = parseConfig(text, { env: {}, baseDir: dir!.path, hostname: 'h' });
      return {
        config,
        env: { PATH: '/nonexistent' },
        path: join(dir!.path, 'config.yaml'),
        secrets: [],
      } as unknown as Parameters<typeof agentReadiness>[0];
    };
    const ok = load('escalation: [scripted, script]');
    expect(await defaultAgentReadiness(ok)).toEqual({
      ok: true,
      what: 'escalation chain escalation: scripted → script',
    });
    const broken = load('chains: { hard: [scripted, cloud] }');
    expect(await agentReadiness(broken, 'hard')).toMatchObject({
      ok: false,
      what: 'escalation chain hard: profile cloud: agent claude: claude not found on PATH',
    });
    // No chain: the default agent, as before.
    expect(await defaultAgentReadiness(broken)).toMatchObject({
      ok: true,
      what: expect.stringMatching(/^agent: script /),
    });
  });
});
