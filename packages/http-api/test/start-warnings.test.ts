import { afterEach, describe, expect, it } from '@jest/globals';
import { silentLogger } from '@codefleet/log';
import { createHttpApi, type HttpApi } from '../src/index.js';
import { apiConfig, openBackends, recordingRequester } from './helpers.js';

// `codefleet serve` runs this for an operator: a framework deprecation warning on its
// stderr reads as something being wrong with their setup.

let backends: Awaited<ReturnType<typeof openBackends>> | undefined;
let api: HttpApi | undefined;
const warnings: string[] = [];
const emitWarning = process.emitWarning;

afterEach(async () => {
  process.emitWarning = emitWarning;
  await api?.close();
  await backends?.dispose();
});

describe('starting the HTTP API', () => {
  it('prints no process warning', async () => {
    // Caught where libraries call it: jest's process does not pass 'warning' events on.
    process.emitWarning = ((warning: string | Error) => {
      warnings.push(String(warning));
    }) as typeof process.emitWarning;
    backends = await openBackends();
    api = createHttpApi({
      config: apiConfig(),
      queue: backends.queue,
      store: backends.store,
      requester: recordingRequester(),
      log: silentLogger(),
    });
    await api.listen();
    expect(warnings).toEqual([]);
  });
});
