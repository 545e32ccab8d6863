import { connect, createServer, type AddressInfo, type Server } from 'node:net';
import { afterAll, describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { decide, isInternalAddress, openRunProxy, parseAllowEntry } from '../src/index.js';

describe('internal addresses', () => {
  it.each([
    '127.0.0.1',
    '127.8.9.10',
    '10.1.2.3',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '100.127.255.255',
    '0.0.0.0',
    '224.0.0.1',
    '255.255.255.255',
    '::1',
    '::',
    'fc00::1',
    'fd00:ec2::254',
    'fe80::1',
    'ff02::1',
    // IPv4 inside IPv6: mapped, NAT64, the old compatible form.
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:10.0.0.1',
    '64:ff9b::a9fe:a9fe',
    '::127.0.0.1',
  ])('%s is internal', (address) => {
    expect(isInternalAddress(address)).toBe(true);
  });

  it.each([
    '1.1.1.1',
    '8.8.8.8',
    '104.16.0.1',
    '172.32.0.1',
    '100.128.0.1',
    '203.0.113.80',
    '2606:4700::1111',
    '::ffff:8.8.8.8',
    '64:ff9b::808:808',
  ])('%s is not', (address) => {
    expect(isInternalAddress(address)).toBe(false);
  });

  it('anything that is not an IP literal counts as internal (fail closed)', () => {
    expect(isInternalAddress('localhost')).toBe(true);
    expect(isInternalAddress('')).toBe(true);
  });

  it('every address of 10/8, 127/8 and 192.168/16, in every IPv6 spelling, is internal', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(10, 127, 192),
        fc.integer({ min: 0, max: 255 }),
        fc.integer({ min: 0, max: 255 }),
        fc.integer({ min: 0, max: 255 }),
        (a, b, c, d) => {
          const v4 = `${a}.${a === 192 ? 168 : b}.${c}.${d}`;
          const [w, x, y, z] = v4.split('.').map(Number) as [number, number, number, number];
          const hex = `${((w << 8) | x).toString(16)}:${((y << 8) | z).toString(16)}`;
          return [v4, `::ffff:${v4}`, `::ffff:${hex}`, `64:ff9b::${hex}`].every(isInternalAddress);
        },
      ),
    );
  });
});

describe('allow entries and the decision', () => {
  it('reads host, host:port, wildcards and bracketed IPv6; refuses what it cannot read', () => {
    expect(parseAllowEntry('Ollama.LAN:11434')).toEqual({ host: 'ollama.lan', wildcard: false, port: 11434 });
    expect(parseAllowEntry('*.npmjs.org')).toEqual({ host: 'npmjs.org', wildcard: true });
    expect(parseAllowEntry('[::1]:8080')).toEqual({ host: '::1', wildcard: false, port: 8080 });
    expect(parseAllowEntry('fd00::5')).toEqual({ host: 'fd00::5', wildcard: false });
    for (const bad of ['http://x', 'a:99999', '', '*.10.0.0.1'])
      expect(() => parseAllowEntry(bad)).toThrow(/sandbox\.network\.allow/);
  });

  const policy = (mode: 'public' | 'allowlist' | 'none', allow: string[] = []) => ({
    mode,
    allow: allow.map(parseAllowEntry),
  });

  it('public: a name resolving only to internal addresses is refused; a public one among them is used', () => {
    expect(decide(policy('public'), 'evil.example', 80, ['127.0.0.1'])).toMatchObject({
      allowed: false,
      reason: expect.stringContaining('resolves to 127.0.0.1'),
    });
    expect(decide(policy('public'), 'mixed.example', 443, ['10.0.0.1', '93.184.216.34'])).toEqual({
      allowed: true,
      address: '93.184.216.34',
    });
    expect(decide(policy('public'), 'nowhere.example', 443, [])).toMatchObject({ allowed: false });
  });

  it('allow names an internal host:port (only that port); allowlist refuses the unnamed; none refuses all', () => {
    expect(decide(policy('public', ['ollama.lan:11434']), 'ollama.lan', 11434, ['10.0.0.5'])).toEqual({
      allowed: true,
      address: '10.0.0.5',
    });
    expect(decide(policy('public', ['ollama.lan:11434']), 'ollama.lan', 22, ['10.0.0.5'])).toMatchObject({
      allowed: false,
    });
    expect(decide(policy('allowlist', ['*.npmjs.org:443']), 'registry.npmjs.org', 443, ['104.16.0.1'])).toMatchObject({
      allowed: true,
    });
    expect(decide(policy('allowlist', ['*.npmjs.org:443']), 'example.com', 443, ['93.184.216.34'])).toEqual({
      allowed: false,
      reason: 'not in sandbox.network.allow',
    });
    expect(decide(policy('none', ['example.com']), 'example.com', 443, ['93.184.216.34'])).toMatchObject({
      allowed: false,
    });
  });
});

describe("the run proxy (a loopback server standing in for a public host: the resolver is the test's)", () => {
  const servers: Server[] = [];
  afterAll(() => {
    for (const server of servers) server.close();
  });

  async function origin(reply: string): Promise<number> {
    const server = createServer((socket) => socket.end(reply));
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return (server.address() as AddressInfo).port;
  }

  /** Sends `request` to the proxy's port and returns everything it answered. */
  function ask(port: number, request: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => socket.write(request));
      let text = '';
      socket.on('data', (chunk) => {
        text += String(chunk);
      });
      socket.on('end', () => resolve(text));
      socket.on('error', reject);
    });
  }

  it('connects to the address it judged, never to what the name resolves to later (DNS rebinding)', async () => {
    const port = await origin('from the judged address\n');
    let lookups = 0;
    // First answer: a public address (here served on loopback by a test-only mapping); any later one: 10.0.0.1.
    const proxy = await openRunProxy({
      policy: { mode: 'public', allow: [] },
      listen: { port: 0 },
      lookup: async () => (lookups++ === 0 ? ['192.0.2.1'] : ['10.0.0.1']),
      connectTimeoutMs: 2_000,
    });
    try {
      const proxyPort = 'port' in proxy.listen ? proxy.listen.port : 0;
      // The judged address is unreachable here: the proxy must try it (502), not re-resolve to 10.0.0.1.
      const answer = await ask(proxyPort, `CONNECT rebind.example:${port} HTTP/1.1\r\nHost: rebind.example\r\n\r\n`);
      expect(answer).toMatch(/^HTTP\/1\.1 502 /);
      expect(answer).toContain('rebind.example');
      expect(lookups).toBe(1);
      expect(proxy.refusals().total).toBe(0);
    } finally {
      await proxy.close();
    }
  });

  it('refuses a name that resolves to loopback with 403 and the reason, and counts it; tunnels a named one', async () => {
    const port = await origin('hello through the tunnel\n');
    const refused: string[] = [];
    const proxy = await openRunProxy({
      policy: { mode: 'public', allow: [`stand-in.test:${port}`] },
      listen: { port: 0 },
      lookup: async () => ['127.0.0.1'],
      onRefused: (r) => refused.push(r.destination),
    });
    try {
      const proxyPort = 'port' in proxy.listen ? proxy.listen.port : 0;
      const denied = await ask(proxyPort, `CONNECT sneaky.test:${port} HTTP/1.1\r\n\r\n`);
      expect(denied).toMatch(/^HTTP\/1\.1 403 Forbidden/);
      expect(denied).toContain(`sneaky.test:${port} refused: resolves to 127.0.0.1`);
      const tunnelled = await ask(proxyPort, `CONNECT stand-in.test:${port} HTTP/1.1\r\n\r\n`);
      expect(tunnelled).toBe('HTTP/1.1 200 Connection Established\r\n\r\nhello through the tunnel\n');
      expect(refused).toEqual([`sneaky.test:${port}`]);
      expect(proxy.refusals()).toEqual({
        kept: [{ destination: `sneaky.test:${port}`, reason: expect.stringContaining('internal address') }],
        total: 1,
      });
      expect(await ask(proxyPort, 'GET / HTTP/1.1\r\n\r\n')).toMatch(/^HTTP\/1\.1 400 /);
      expect(await ask(proxyPort, 'CONNECT nohost HTTP/1.1\r\n\r\n')).toMatch(/^HTTP\/1\.1 400 /);
    } finally {
      await proxy.close();
    }
  });
});
