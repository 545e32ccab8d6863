import { describe, expect, it } from '@jest/globals';
import { expandString } from '../src/expand.js';
import { parse, problems, yaml } from './helpers.js';

describe('${VAR} expansion', () => {
  it('expands variables and defaults in string values', () => {
    const env = { REDIS_HOST: 'redis.internal', QUEUE: 'jobs' };
    const { config } = parse(
      yaml(
        'queue:',
        '  name: ${QUEUE}-${STAGE:-dev}',
        '  bullmq:',
        '    url: redis://${REDIS_HOST}:${REDIS_PORT:-6379}/0',
        'forge:',
        '  github:',
        '    trigger_label: "${LABEL:-ai: please}"',
      ),
      env,
    );
    expect(config.queue.name).toBe('jobs-dev');
    expect(config.queue.bullmq.url).toBe('redis://redis.internal:6379/0');
    expect(config.forge.github.trigger_label).toBe('ai: please');
  });

  it('uses the default when the variable is empty, as the shell does', () => {
    expect(parse(yaml('queue:', '  name: ${Q:-fallback}'), { Q: '' }).config.queue.name).toBe('fallback');
  });

  it('expands inside lists', () => {
    const { config } = parse(yaml('agents:', '  aider:', '    extra_args: [--model-settings, "${SETTINGS:-s.yml}"]'));
    expect(config.agents.aider.extra_args).toEqual(['--model-settings', 's.yml']);
  });

  it('does not expand keys', () => {
    expect(problems(yaml('worker:', '  ${KEY:-concurrency}: 2'))).toEqual([
      { path: 'worker.${KEY:-concurrency}', message: 'unknown key' },
    ]);
  });

  it('keeps $${ as a literal ${', () => {
    expect(
      parse(yaml('patch:', '  commit_message_prefix: "$${NOT_A_VAR} [bot]"')).config.patch.commit_message_prefix,
    ).toBe('${NOT_A_VAR} [bot]');
    expect(expandString('$${A} and ${B}', { A: 'a', B: 'b' }).value).toBe('${A} and b');
    expect(expandString('cost: $5', {}).value).toBe('cost: $5');
  });

  it('cannot inject YAML through a value', () => {
    const { config } = parse(yaml('queue:', '  name: ${NAME}'), { NAME: 'x\nbackend: sqs\n# ' });
    expect(config.queue.name).toBe('x\nbackend: sqs\n# ');
    expect(config.queue.backend).toBe('local');
  });

  it('reports an unset variable with the key path and the variable', () => {
    expect(
      problems(
        yaml(
          'queue:',
          '  bullmq:',
          '    url: ${REDIS_URL}',
          'agents:',
          '  command:',
          '    argv: [run, "${AGENT_BIN}"]',
        ),
      ),
    ).toEqual([
      {
        path: 'queue.bullmq.url',
        message: 'environment variable REDIS_URL is not set (use ${REDIS_URL:-default} to give a fallback)',
      },
      {
        path: 'agents.command.argv[1]',
        message: 'environment variable AGENT_BIN is not set (use ${AGENT_BIN:-default} to give a fallback)',
      },
    ]);
  });

  it('does not read variables from Object.prototype', () => {
    expect(problems(yaml('queue:', '  name: ${constructor}'))).toEqual([
      {
        path: 'queue.name',
        message: 'environment variable constructor is not set (use ${constructor:-default} to give a fallback)',
      },
    ]);
  });

  it('reports malformed references', () => {
    expect(problems(yaml('queue:', '  name: "${not valid}"', 'worker:', '  worker_id: "${OPEN"'))).toEqual([
      {
        path: 'queue.name',
        message: 'invalid reference ${not valid}: expected ${NAME} or ${NAME:-default} (write $${ for a literal ${)',
      },
      { path: 'worker.worker_id', message: 'unterminated ${ in "${OPEN" (write $${ for a literal ${)' },
    ]);
  });

  it('treats a value that expands to nothing as unset, so the default applies', () => {
    const text = yaml('worker:', '  worker_id: ${CODEFLEET_WORKER_ID:-}', '  metrics_port: ${METRICS_PORT:-}');
    expect(parse(text).config.worker).toMatchObject({ worker_id: 'mini-01' });
    expect(parse(text).config.worker.metrics_port).toBeUndefined();
    const set = parse(text, { CODEFLEET_WORKER_ID: 'mbp-m4-001', METRICS_PORT: '9464' }).config.worker;
    expect(set).toMatchObject({ worker_id: 'mbp-m4-001', metrics_port: 9464 });
  });

  it('keeps a literal empty string as written', () => {
    expect(parse(yaml('patch:', '  commit_message_prefix: ""')).config.patch.commit_message_prefix).toBe('');
    expect(problems(yaml('worker:', '  worker_id: ""'))).toEqual([
      { path: 'worker.worker_id', message: 'must not be empty, got ""' },
    ]);
  });
});

describe('coercion of expanded values', () => {
  it('turns expanded strings into numbers and booleans where the schema wants them', () => {
    const text = yaml(
      'queue:',
      '  sqs:',
      '    wait_time_seconds: ${SQS_WAIT:-20}',
      '    fifo: ${SQS_FIFO:-false}',
      '    queue_url: http://localhost:9324/000000000000/jobs.fifo',
      '  heartbeat_seconds: ${HEARTBEAT}',
    );
    const { config } = parse(text, { SQS_WAIT: '5', SQS_FIFO: 'TRUE', HEARTBEAT: '7.5' });
    expect(config.queue.sqs.wait_time_seconds).toBe(5);
    expect(config.queue.sqs.fifo).toBe(true);
    expect(config.queue.heartbeat_seconds).toBe(7.5);
    expect(parse(text, { HEARTBEAT: '1' }).config.queue.sqs.wait_time_seconds).toBe(20);
  });

  it('still range-checks coerced numbers', () => {
    expect(problems(yaml('queue:', '  sqs:', '    wait_time_seconds: ${SQS_WAIT}'), { SQS_WAIT: '30' })).toEqual([
      { path: 'queue.sqs.wait_time_seconds', message: 'must be <= 20, got 30 (from "${SQS_WAIT}")' },
    ]);
  });

  it('rejects expanded text that is not a number, showing where it came from', () => {
    expect(problems(yaml('worker:', '  concurrency: ${CONCURRENCY}'), { CONCURRENCY: 'two' })).toEqual([
      { path: 'worker.concurrency', message: 'expected number, got "two" (from "${CONCURRENCY}")' },
    ]);
  });

  it('does not coerce literal strings', () => {
    expect(problems(yaml('worker:', '  concurrency: "2"', '  backoff:', '    jitter: "true"'))).toEqual([
      { path: 'worker.concurrency', message: 'expected number, got "2"' },
      { path: 'worker.backoff.jitter', message: 'expected boolean, got "true"' },
    ]);
  });

  it('does not coerce into string fields', () => {
    expect(parse(yaml('worker:', '  worker_id: ${ID}'), { ID: '42' }).config.worker.worker_id).toBe('42');
  });

  it('masks secret values in problem messages', () => {
    const token = 'ghp_abcdefghijklmnopqrstuvwxyz0123456789';
    const found = problems(yaml('worker:', '  concurrency: ${GITHUB_TOKEN}'), { GITHUB_TOKEN: token });
    expect(found).toEqual([
      { path: 'worker.concurrency', message: 'expected number, got "***" (from "${GITHUB_TOKEN}")' },
    ]);
  });
});
