import { describe, expect, it } from '@jest/globals';
import { parse, problems, yaml } from './helpers.js';

// agents.escalation and agents.chains: every tier a real agent or profile, chain names that
// cannot be mistaken for an agent or a profile, routes that may name a chain.
describe('escalation chains in config', () => {
  const profiles = [
    'agents:',
    '  profiles:',
    '    local-small: { agent: ollama, model: "qwen2.5-coder:1.5b", budget_usd: 0.01 }',
    '    local-big: { agent: ollama, model: "qwen2.5-coder:7b" }',
  ];

  it('reads agents.escalation and named chains, and lets a route name either', () => {
    const { config } = parse(
      yaml(
        ...profiles,
        '  escalation: [local-small, local-big, claude]',
        '  chains:',
        '    cheap-first: [local-small, codex]',
        'router:',
        '  routes:',
        '    CODE2: { agent: cheap-first }',
        '    CODE3: { agent: escalation }',
      ),
    );
    expect(config.agents.escalation).toEqual(['local-small', 'local-big', 'claude']);
    expect(config.agents.chains).toEqual({ 'cheap-first': ['local-small', 'codex'] });
    expect(config.router.routes.CODE2.agent).toBe('cheap-first');
  });

  it('refuses tiers that name nothing runnable, and chain names that collide', () => {
    expect(
      problems(yaml(...profiles, '  escalation: [local-small, huge]', '  chains:', '    a: [local-big, nope]')),
    ).toEqual([
      { path: 'agents.escalation[1]', message: 'names no agent or agents.profiles entry: "huge"' },
      { path: 'agents.chains.a[1]', message: 'names no agent or agents.profiles entry: "nope"' },
    ]);
    expect(
      problems(
        yaml(
          ...profiles,
          '  chains:',
          '    claude: [local-big]',
          '    local-small: [claude]',
          '    escalation: [codex]',
        ),
      ).map((p) => p.path),
    ).toEqual(['agents.chains.claude', 'agents.chains.local-small', 'agents.chains.escalation']);
    expect(problems(yaml('agents:', '  profiles:', '    escalation: { agent: claude }')).map((p) => p.path)).toEqual([
      'agents.profiles.escalation',
    ]);
    // A chain of chains is refused: a tier is one agent.
    expect(problems(yaml(...profiles, '  chains:', '    a: [local-big]', '    b: [a]')).map((p) => p.path)).toEqual([
      'agents.chains.b[0]',
    ]);
  });

  it('a route may name `escalation` only when agents.escalation is set', () => {
    expect(problems(yaml('router:', '  routes:', '    CODE1: { agent: escalation }')).map((p) => p.path)).toEqual([
      'router.routes.CODE1.agent',
    ]);
  });
});
