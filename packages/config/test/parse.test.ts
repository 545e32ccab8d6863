import { describe, expect, it } from '@jest/globals';
import { ConfigError, configSchema, parseConfig } from '../src/index.js';
import { BASE_DIR, configError, parse, problems, yaml } from './helpers.js';

describe('parseConfig: defaults', () => {
  it('accepts an empty file and fills every default', () => {
    const { config, source, secrets } = parse('');
    expect(source).toBe(`${BASE_DIR}/config.yaml`);
    expect(secrets).toEqual([]);
    expect(config.data_dir).toBe(`${BASE_DIR}/.codefleet-data`);
    expect(config.queue).toMatchObject({
      backend: 'local',
      name: 'codefleet',
      lease_seconds: 120,
      heartbeat_seconds: 30,
    });
    expect(config.queue.local.path).toBe(`${BASE_DIR}/.codefleet-data/queue.sqlite`);
    expect(config.queue.sqs).toMatchObject({
      wait_time_seconds: 20,
      visibility_timeout: 3600,
      max_receive_count: 4,
      fifo: false,
      region: 'us-east-1',
    });
    expect(config.workspace).toEqual({
      cache_dir: `${BASE_DIR}/.codefleet-data/cache`,
      cache: { max_age_days: 30 },
      reuse: true,
      keep_failed: false,
      protect_workflows: true,
      memory_chars: 4000,
      scope: { exclude: [], read: [] },
    });
    expect(config.agents.default).toBe('script');
    expect(config.agents.aider).toMatchObject({
      binary: 'aider',
      model: 'ollama_chat/qwen2.5-coder:7b',
      timeout_seconds: 600,
    });
    expect(config.agents.claude).toMatchObject({ max_turns: 30, api_key_env: 'ANTHROPIC_API_KEY' });
    expect(config.worker).toMatchObject({ worker_id: 'mini-01', concurrency: 1, max_retries: 3, max_fix_attempts: 3 });
    expect(config.worker.backoff).toEqual({
      strategy: 'fixed',
      delay_seconds: 10,
      max_delay_seconds: 300,
      jitter: true,
    });
    expect(config.verification.toolchains.go).toEqual({
      build: ['go', 'build', './...'],
      format: ['gofmt', '-l', '-w', '.'],
      lint: ['go', 'vet', './...'],
      test: ['go', 'test', './...'],
    });
    expect(config.verification.toolchains.node.format).toEqual(['npm', 'run', 'format', '--if-present']);
    expect(config.patch).toEqual({
      auto_commit: false,
      commit_message_prefix: '[Worker Auto-Commit]',
      command_timeout_seconds: 300,
      git_timeout_seconds: 30,
      stop_on_error: false,
      protected_patterns: ['.env*', '*credentials*', '*.key', '*.pem'],
      action_on_protected_file: 'error',
      show_execution_summary: true,
    });
    expect(config.forge).toEqual({
      type: 'local',
      github: {
        api_url: 'https://api.github.com',
        token_env: 'GITHUB_TOKEN',
        trigger_label: 'codefleet',
        labels: {
          queued: 'codefleet:queued',
          running: 'codefleet:running',
          pr_opened: 'codefleet:pr-opened',
          failed: 'codefleet:failed',
        },
        webhook_secret_env: 'GITHUB_WEBHOOK_SECRET',
        webhook_host: '127.0.0.1',
        repos: [],
        poll_interval_seconds: 60,
        ci_feedback: { enabled: true, max_rounds: 2, log_bytes: 4096, settle_seconds: 1800 },
      },
    });
    expect(config.logging).toEqual({ level: 'info', format: 'auto', redact_values: [] });
    // One port for every inbound surface; no producer has a port of its own unless one is set.
    expect(config.serve).toEqual({ port: 8787, host: '127.0.0.1' });
    expect([config.line.port, config.http_api.port, config.dashboard.port]).toEqual([undefined, undefined, undefined]);
  });

  it('keeps a port of its own where one is configured', () => {
    const { config } = parse(
      yaml('forge:', '  github:', '    webhook_port: 9001', 'line:', '  port: 9002', 'http_api:', '  port: 9003'),
    );
    expect([config.forge.github.webhook_port, config.line.port, config.http_api.port]).toEqual([9001, 9002, 9003]);
  });

  it('treats a file of comments like an empty file', () => {
    expect(parse('# nothing here\n').config).toEqual(parse('').config);
  });

  it('keeps defaults of sibling keys when one nested key is set', () => {
    const { config } = parse(yaml('verification:', '  toolchains:', '    go:', '      test: [go, test, -race, ./...]'));
    expect(config.verification.toolchains.go.test).toEqual(['go', 'test', '-race', './...']);
    expect(config.verification.toolchains.go.build).toEqual(['go', 'build', './...']);
    expect(config.verification.toolchains.rust.lint).toEqual(['cargo', 'clippy', '--', '-D', 'warnings']);
  });

  it('does not share default arrays between results', () => {
    const first = parse('').config;
    first.patch.protected_patterns.push('*.secret');
    expect(parse('').config.patch.protected_patterns).toHaveLength(4);
  });
});

describe('parseConfig: normalize', () => {
  it('resolves relative paths against the config directory and keeps absolute ones', () => {
    const { config } = parse(
      yaml(
        'data_dir: ./state',
        'queue:',
        '  local:',
        '    path: db/jobs.sqlite',
        'workspace:',
        '  cache_dir: /var/cache/codefleet',
        'agents:',
        '  aider:',
        '    binary: ./bin/aider',
        '  claude:',
        '    binary: /opt/claude',
        '  script:',
        '    module: ./agents/fake.js',
      ),
    );
    expect(config.data_dir).toBe(`${BASE_DIR}/state`);
    expect(config.queue.local.path).toBe(`${BASE_DIR}/db/jobs.sqlite`);
    expect(config.workspace.cache_dir).toBe('/var/cache/codefleet');
    expect(config.agents.aider.binary).toBe(`${BASE_DIR}/bin/aider`);
    expect(config.agents.claude.binary).toBe('/opt/claude');
    expect(config.agents.codex.binary).toBe('codex');
    expect(config.agents.script.module).toBe(`${BASE_DIR}/agents/fake.js`);
  });

  it('derives paths under a custom data_dir', () => {
    const { config } = parse('data_dir: /data\n');
    expect(config.queue.local.path).toBe('/data/queue.sqlite');
    expect(config.workspace.cache_dir).toBe('/data/cache');
  });

  it('derives heartbeat, region and per-agent timeouts', () => {
    const { config } = parse(
      yaml(
        'queue:',
        '  lease_seconds: 60',
        'agents:',
        '  timeout_seconds: 900',
        '  claude:',
        '    timeout_seconds: 1200',
      ),
      {
        AWS_REGION: 'ap-northeast-1',
      },
    );
    expect(config.queue.heartbeat_seconds).toBe(15);
    expect(config.queue.sqs.region).toBe('ap-northeast-1');
    expect(config.agents.aider.timeout_seconds).toBe(900);
    expect(config.agents.claude.timeout_seconds).toBe(1200);
  });

  it('falls back to AWS_DEFAULT_REGION, and an explicit region wins over both', () => {
    expect(parse('', { AWS_DEFAULT_REGION: 'eu-west-1' }).config.queue.sqs.region).toBe('eu-west-1');
    const explicit = parse(yaml('queue:', '  sqs:', '    region: us-west-2'), { AWS_REGION: 'ap-northeast-1' });
    expect(explicit.config.queue.sqs.region).toBe('us-west-2');
  });

  it('uses an explicit worker id over the host name', () => {
    expect(parse(yaml('worker:', '  worker_id: mbp-m4-001')).config.worker.worker_id).toBe('mbp-m4-001');
  });
});

describe('parseConfig: workspace scope', () => {
  it('takes exclude and read patterns, and refuses a pattern that would smuggle in another line', () => {
    const { config } = parse(
      yaml('workspace:', '  scope:', '    exclude: ["**/*.env", "**/secrets/**"]', '    read: ["vendor/**"]'),
    );
    expect(config.workspace.scope).toEqual({ exclude: ['**/*.env', '**/secrets/**'], read: ['vendor/**'] });
    expect(problems(yaml('workspace:', '  scope:', '    exclude: ["a\\nb", ""]'))).toEqual([
      expect.objectContaining({
        path: 'workspace.scope.exclude[0]',
        message: expect.stringContaining('control characters'),
      }),
      expect.objectContaining({ path: 'workspace.scope.exclude[1]' }),
    ]);
  });
});

describe('parseConfig: agents.command.argv', () => {
  it('checks the template at load: unknown placeholders and task text spliced where a program parses it', () => {
    expect(problems(yaml('agents:', '  command:', '    argv: [agent, "{promptfile}"]'))).toEqual([
      expect.objectContaining({
        path: 'agents.command.argv[1]',
        message: expect.stringContaining('unknown placeholder {promptfile}'),
      }),
    ]);
    expect(problems(yaml('agents:', '  command:', `    argv: [env, -S, "sh -c 'agent {prompt}'"]`))).toEqual([
      expect.objectContaining({
        path: 'agents.command.argv[2]',
        message: expect.stringContaining('{prompt} must be a whole argument'),
      }),
    ]);
    expect(
      parse(yaml('agents:', '  command:', '    argv: [agent, --file, "{prompt_file}", "--message={prompt}"]')).config
        .agents.command.argv,
    ).toHaveLength(4);
  });
});

describe('parseConfig: problems', () => {
  it('reports every problem at once with its path and the bad value', () => {
    const error = configError(() =>
      parse(
        yaml(
          'queue:',
          '  backend: redis',
          '  sqs:',
          '    visibility_timeout: abc',
          '    wait_time_seconds: 25',
          'worker:',
          '  concurrency: 0',
          '  backoff:',
          '    jitter: "yes"',
          'forge:',
          '  github:',
          '    api_url: not a url',
          'logging:',
          '  redact_values: [lower-case-name]',
        ),
      ),
    );
    expect(error).toBeInstanceOf(ConfigError);
    expect(error.code).toBe('invalid_config');
    expect(error.verdict).toBe('permanent');
    expect(error.problems).toEqual(
      expect.arrayContaining([
        { path: 'queue.backend', message: 'expected one of local, bullmq, sqs, got "redis"' },
        { path: 'queue.sqs.visibility_timeout', message: 'expected number, got "abc"' },
        { path: 'queue.sqs.wait_time_seconds', message: 'must be <= 20, got 25' },
        { path: 'worker.concurrency', message: 'must be >= 1, got 0' },
        { path: 'worker.backoff.jitter', message: 'expected boolean, got "yes"' },
        { path: 'forge.github.api_url', message: 'expected a URL, got "not a url"' },
        {
          path: 'logging.redact_values[0]',
          message: 'expected an environment variable name such as GITHUB_TOKEN, got "lower-case-name"',
        },
      ]),
    );
    expect(error.problems).toHaveLength(7);
    const lines = error.message.split('\n');
    expect(lines[0]).toBe(`invalid configuration in ${BASE_DIR}/config.yaml (7 problems):`);
    expect(lines).toContain('  queue.sqs.visibility_timeout: expected number, got "abc"');
  });

  it('reports unknown keys with a suggestion', () => {
    expect(problems(yaml('queue:', '  sqs:', '    visiblity_timeout: 60', '    colour: blue', 'wrker: {}'))).toEqual([
      { path: 'queue.sqs.visiblity_timeout', message: 'unknown key (did you mean visibility_timeout?)' },
      { path: 'queue.sqs.colour', message: 'unknown key' },
      { path: 'wrker', message: 'unknown key (did you mean worker?)' },
    ]);
  });

  it('suggests the closest enum value', () => {
    expect(problems(yaml('agents:', '  default: cluade'))).toEqual([
      {
        path: 'agents.default',
        message:
          'expected one of aider, claude, codex, gemini, ollama, command, script, got "cluade" (did you mean claude?)',
      },
    ]);
  });

  it('names the wrong shape of a section', () => {
    expect(problems(yaml('queue: [a, b]', 'patch:', '  protected_patterns: ".env"'))).toEqual([
      { path: 'queue', message: 'expected a mapping, got a list' },
      { path: 'patch.protected_patterns', message: 'expected a list, got ".env"' },
    ]);
  });

  it('refuses a file that is not a mapping', () => {
    expect(problems('- queue\n- worker\n')).toEqual([
      { path: '', message: 'the file must be a mapping of sections (queue:, agents:, ...), got a list' },
    ]);
  });

  it('reports YAML syntax errors with line and column: an unclosed [ where it opens, not where the file gave up', () => {
    const error = configError(() => parse(yaml('queue:', '  backend: local', 'worker: [1, 2', 'patch: {}')));
    expect(error.problems).toHaveLength(1);
    expect(error.problems[0]?.path).toBe('');
    expect(error.problems[0]?.message).toMatch(/^YAML syntax error at line 3, column 9: .*end with a \]/);
    expect(error.message).toContain('YAML syntax error at line 3, column 9');
  });

  // The yaml library reports this one mistake twice, both on line 2 (where `local` starts).
  it('reports an over-indented line once, at that line', () => {
    const error = configError(() =>
      parse(yaml('queue:', '  backend: local', '   lease_seconds: 60', 'worker:', '  concurrency: 2')),
    );
    expect(error.problems).toEqual([
      {
        path: '',
        message:
          'YAML syntax error at line 3, column 4: Implicit keys need to be on a single line (this line is indented deeper than the key above it, so it reads as that value going on)',
      },
    ]);
    expect(error.message.match(/YAML syntax error/g)).toHaveLength(1);
  });

  it('reports an unclosed quote where it opens, and a key without its colon at that key', () => {
    // The library places the missing quote at the end of the file (line 7 of 6).
    expect(
      problems(yaml('queue:', '  backend: local', 'agents:', '  default: "claude', 'worker:', '  concurrency: 2')),
    ).toEqual([{ path: '', message: 'YAML syntax error at line 4, column 12: Missing closing "quote' }]);
    expect(problems(yaml('queue:', "  name: 'jobs", 'worker: {}'))).toEqual([
      { path: '', message: "YAML syntax error at line 2, column 9: Missing closing 'quote" },
    ]);
    expect(problems(yaml('queue:', '  backend: local', 'agents', '  default: claude'))).toEqual([
      {
        path: '',
        message:
          'YAML syntax error at line 3, column 1: Implicit keys need to be on a single line (is the `:` after this key missing?)',
      },
    ]);
  });

  it('reports duplicate keys as syntax errors', () => {
    expect(problems(yaml('worker:', '  concurrency: 1', '  concurrency: 2'))[0]?.message).toMatch(
      /^YAML syntax error at line 3, column 3: Map keys must be unique/,
    );
  });

  it('treats a __proto__ key as an unknown key, not as a prototype', () => {
    expect(problems(yaml('worker:', '  __proto__:', '    polluted: true'))).toEqual([
      { path: 'worker.__proto__', message: 'unknown key' },
    ]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe('parseConfig: cross-field rules', () => {
  it('requires a queue URL for the sqs backend', () => {
    expect(problems(yaml('queue:', '  backend: sqs'))).toEqual([
      { path: 'queue.sqs.queue_url', message: 'required when queue.backend is sqs' },
    ]);
  });

  it('accepts a complete sqs setup', () => {
    const url = 'https://sqs.ap-northeast-1.amazonaws.com/123456789012/codefleet';
    const { config } = parse(yaml('queue:', '  backend: sqs', '  sqs:', `    queue_url: ${url}`));
    expect(config.queue.sqs.queue_url).toBe(url);
  });

  it('requires a .fifo URL for a FIFO queue', () => {
    expect(
      problems(
        yaml('queue:', '  backend: sqs', '  sqs:', '    queue_url: http://localhost:9324/q/jobs', '    fifo: true'),
      ),
    ).toEqual([
      {
        path: 'queue.sqs.queue_url',
        message: 'must end in .fifo when queue.sqs.fifo is true, got "http://localhost:9324/q/jobs"',
      },
    ]);
  });

  it('store.retention: 90 days, hourly, no count limit by default; a bad bound is refused', () => {
    expect(parse('').config.store.retention).toEqual({ max_age_days: 90, interval_minutes: 60 });
    expect(parse('').config.workspace.cache).toEqual({ max_age_days: 30 });
    expect(parse(yaml('workspace:', '  cache:', '    max_size_mb: 2048')).config.workspace.cache).toEqual({
      max_size_mb: 2048,
      max_age_days: 30,
    });
    expect(
      parse(yaml('store:', '  retention:', '    max_age_days: 0', '    max_runs: 5000')).config.store.retention,
    ).toEqual({ max_age_days: 0, max_runs: 5000, interval_minutes: 60 });
    expect(problems(yaml('store:', '  retention:', '    max_runs: 0'))).toEqual([
      expect.objectContaining({ path: 'store.retention.max_runs' }),
    ]);
  });

  it('concurrency limits: unset by default; a requester share needs a repository limit', () => {
    expect(parse('').config.queue).toMatchObject({ priority_aging_seconds: 300 });
    expect(parse('').config.queue.per_repo_concurrency).toBeUndefined();
    expect(problems(yaml('queue:', '  per_requester_share: 0.5'))).toEqual([
      {
        path: 'queue.per_requester_share',
        message: "needs queue.per_repo_concurrency (it is a share of a repository's slots), got 0.5",
      },
    ]);
    const limited = parse(yaml('queue:', '  per_repo_concurrency: 2', '  per_requester_share: 0.5')).config.queue;
    expect(limited).toMatchObject({ per_repo_concurrency: 2, per_requester_share: 0.5 });
    expect(problems(yaml('queue:', '  per_repo_concurrency: 0'))).toEqual([
      expect.objectContaining({ path: 'queue.per_repo_concurrency' }),
    ]);
  });

  it('requires the heartbeat to be faster than the lease and the visibility timeout', () => {
    expect(problems(yaml('queue:', '  lease_seconds: 60', '  heartbeat_seconds: 60'))).toEqual([
      { path: 'queue.heartbeat_seconds', message: 'must be < queue.lease_seconds (60), got 60' },
    ]);
    const sqs = yaml(
      'queue:',
      '  backend: sqs',
      '  sqs:',
      '    queue_url: http://localhost:9324/q',
      '    visibility_timeout: 20',
    );
    expect(problems(sqs)).toEqual([
      {
        path: 'queue.heartbeat_seconds',
        message: 'must be < queue.sqs.visibility_timeout (20) when queue.backend is sqs, got 30',
      },
    ]);
    expect(problems(yaml('queue:', '  backend: bullmq', '  bullmq:', '    lock_duration_ms: 20000'))).toEqual([
      {
        path: 'queue.heartbeat_seconds',
        message: 'must be < queue.bullmq.lock_duration_ms (20000 ms) when queue.backend is bullmq, got 30 s',
      },
    ]);
    expect(
      parse(yaml('queue:', '  backend: bullmq', '  heartbeat_seconds: 5', '  bullmq:', '    lock_duration_ms: 20000'))
        .config.queue.heartbeat_seconds,
    ).toBe(5);
  });

  it('requires an argv for the command agent', () => {
    expect(problems(yaml('agents:', '  default: command'))).toEqual([
      { path: 'agents.command.argv', message: 'must not be empty when agents.default is command' },
    ]);
    const { config } = parse(
      yaml('agents:', '  default: command', '  command:', '    argv: [my-agent, "{prompt_file}"]'),
    );
    expect(config.agents.command.argv).toEqual(['my-agent', '{prompt_file}']);
  });

  it('requires max_delay_seconds >= delay_seconds', () => {
    expect(problems(yaml('worker:', '  backoff:', '    delay_seconds: 30', '    max_delay_seconds: 5'))).toEqual([
      { path: 'worker.backoff.max_delay_seconds', message: 'must be >= worker.backoff.delay_seconds (30), got 5' },
    ]);
  });

  it('requires GitHub App settings to come together', () => {
    expect(problems(yaml('forge:', '  github:', '    app_id: 42'))).toEqual([
      {
        path: 'forge.github.installation_id',
        message: 'required when forge.github.app_id is set (the installation of the App on your repositories)',
      },
      { path: 'forge.github.private_key_env', message: 'required when forge.github.app_id is set' },
    ]);
  });

  it('reports rule problems together', () => {
    const found = problems(
      yaml('queue:', '  backend: sqs', 'agents:', '  default: command', 'forge:', '  type: github'),
    );
    expect(found.map((p) => p.path)).toEqual(['queue.sqs.queue_url', 'agents.command.argv', 'forge.github.token_env']);
  });
});

describe('configSchema', () => {
  it('describes every field', () => {
    const undocumented: string[] = [];
    const visit = (schema: unknown, path: string) => {
      const s = schema as { description?: string; unwrap?: () => unknown; shape?: Record<string, unknown> };
      if (s.description === undefined) undocumented.push(path);
      let inner: unknown = schema;
      while (typeof (inner as { unwrap?: unknown }).unwrap === 'function')
        inner = (inner as { unwrap: () => unknown }).unwrap();
      const shape = (inner as { shape?: Record<string, unknown> }).shape;
      if (shape !== undefined)
        for (const [key, child] of Object.entries(shape)) visit(child, path === '' ? key : `${path}.${key}`);
    };
    visit(configSchema, '');
    expect(undocumented).toEqual([]);
  });
});

describe('sandbox:', () => {
  const options = { baseDir: '/etc/codefleet', hostname: 'h', env: { HOME: '/home/w' } };

  it('defaults to the OS sandbox, the public network through its proxy, and limits per run', () => {
    expect(parseConfig('', options).config.sandbox).toEqual({
      mode: 'auto',
      network: { mode: 'public', allow: [] },
      read_paths: [],
      hidden_paths: [],
      container: { runtime: 'docker' },
      limits: {
        processes: 512,
        memory_mb: 8192,
        tmp_mb: 4096,
        tmp_files: 500_000,
        shm_mb: 512,
        open_files: 8192,
        cpu_seconds: 7200,
        file_size_mb: 4096,
      },
    });
  });

  it('reads the network as a mode or as { mode, allow }, `on` as public, and refuses an unreadable allow entry', () => {
    const sandbox = (yaml: string) => parseConfig(yaml, options).config.sandbox.network;
    expect(sandbox('sandbox:\n  network: none\n')).toEqual({ mode: 'none', allow: [] });
    expect(sandbox('sandbox:\n  network: on\n')).toEqual({ mode: 'public', allow: [] });
    expect(
      sandbox(
        'sandbox:\n  network:\n    mode: allowlist\n    allow: [api.anthropic.com, "*.npmjs.org:443", "127.0.0.1:11434", "[::1]:8080"]\n',
      ),
    ).toEqual({ mode: 'allowlist', allow: ['api.anthropic.com', '*.npmjs.org:443', '127.0.0.1:11434', '[::1]:8080'] });
    expect(sandbox('sandbox:\n  network:\n    allow: [ollama.lan:11434]\n')).toEqual({
      mode: 'public',
      allow: ['ollama.lan:11434'],
    });
    expect(() => parseConfig('sandbox:\n  network:\n    allow: ["http://x.example/"]\n', options)).toThrow(
      /sandbox\.network/,
    );
  });

  it('resolves read and hidden paths against HOME and the config file', () => {
    const { sandbox } = parseConfig(
      'sandbox:\n  read_paths: [~/.cargo, tools]\n  hidden_paths: [/opt/keys]\n',
      options,
    ).config;
    expect(sandbox.read_paths).toEqual(['/home/w/.cargo', '/etc/codefleet/tools']);
    expect(sandbox.hidden_paths).toEqual(['/opt/keys']);
  });

  it('refuses an unknown mode and a container without an image', () => {
    expect(() => parseConfig('sandbox:\n  mode: firejail\n', options)).toThrow(/sandbox\.mode/);
    expect(() => parseConfig('sandbox:\n  mode: container\n', options)).toThrow(/sandbox\.container\.image/);
  });
});
