import { isIP } from 'node:net';
import * as z from 'zod';
import { envVarName } from './common.js';

/**
 * An operator's name as actions record it (`cancel by alice via dashboard`): also what a
 * trusted proxy's identity header may hold, so e-mail addresses fit.
 */
const operatorName = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}$/, { error: 'expected a name such as alice or alice@example.com' });

/** An address (`127.0.0.1`, `::1`) or a subnet (`10.0.0.0/8`) a trusted proxy connects from. */
const addressOrSubnet = z.string().refine((text) => {
  const [address = '', prefix, extra] = text.split('/');
  const family = isIP(address);
  if (family === 0 || extra !== undefined) return false;
  if (prefix === undefined) return true;
  const bits = Number(prefix);
  return /^\d{1,3}$/.test(prefix) && bits <= (family === 4 ? 32 : 128);
}, 'expected an IP address or a subnet such as 10.0.0.0/8');

const trustedProxy = z.strictObject({
  header: z
    .string()
    .regex(/^[A-Za-z0-9-]{1,64}$/, { error: 'expected a header name such as X-Forwarded-User' })
    .default('X-Forwarded-User')
    .describe('Header the proxy puts the signed-in user in; it names the operator, no token needed.'),
  from: z
    .array(addressOrSubnet)
    .min(1)
    .describe(
      'Addresses (or subnets) the proxy connects from. The header is believed only on connections from these; from anywhere else it is ignored, so the proxy must be the only way in from them.',
    ),
});

/** `dashboard:` — the web dashboard (`codefleet dashboard`, or mounted in `serve` / `worker`). */
export const dashboardSchema = z
  .strictObject({
    enabled: z.boolean().default(false).describe('Run the dashboard in `codefleet serve`.'),
    port: z
      .number()
      .int()
      .min(0)
      .max(65_535)
      .optional()
      .describe(
        'A port of its own for the dashboard (`codefleet dashboard` alone: default 8790); unset: served on serve.port under /.',
      ),
    host: z
      .string()
      .min(1)
      .default('127.0.0.1')
      .describe(
        'Address the dashboard binds to. It can cancel and retry work: keep it on loopback, or put a TLS proxy in front of it.',
      ),
    token_env: envVarName
      .default('CODEFLEET_DASHBOARD_TOKEN')
      .describe(
        'Variable holding the shared token to log in with (or send as a bearer token). Unset, and with no operators and no trusted proxy: one is generated once and kept in <data_dir>/dashboard-token.',
      ),
    token_operator: operatorName
      .default('dashboard')
      .describe('The operator name actions taken with the shared token are recorded under.'),
    operators: z
      .record(operatorName, envVarName)
      .default(() => ({}))
      .describe(
        'Operator name → variable holding that operator’s token (at least 16 characters), so the journal says who cancelled, retried or dropped.',
      ),
    trusted_proxy: trustedProxy
      .optional()
      .describe(
        'A reverse proxy that signs people in (oauth2-proxy, an SSO gateway) and names them in a header. Unset: the header is never believed.',
      ),
    session_hours: z
      .number()
      .positive()
      .max(24 * 30)
      .default(12)
      .describe(
        'How long a login lasts, from the moment it was made; logging out ends it at once. Sessions live in the dashboard process: a restart logs everyone out.',
      ),
    read_only: z
      .boolean()
      .default(false)
      .describe('Show everything but offer and accept no action (cancel, retry, redrive, drop).'),
  })
  .prefault({})
  .describe('Web dashboard over the run store, the queue and the dead-letter queue.');
