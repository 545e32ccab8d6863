import * as z from 'zod';
import { agentsSchema } from './agents.js';
import { httpApiSchema, lineSchema, routerSchema, slackSchema } from './chat.js';
import { costsSchema } from './costs.js';
import { dashboardSchema } from './dashboard.js';
import { forgeSchema } from './forge.js';
import { loggingSchema } from './logging.js';
import { patchSchema } from './patch.js';
import { queueSchema } from './queue.js';
import { sandboxSchema } from './sandbox.js';
import { serveSchema } from './serve.js';
import { signingSchema } from './signing.js';
import { storeSchema } from './store.js';
import { verificationSchema } from './verification.js';
import { workerSchema } from './worker.js';
import { workspaceSchema } from './workspace.js';

/**
 * The shape of `config.yaml`, step 1 of 3 (schema -> normalize -> cross-field rules). Every
 * field has a default or is optional, so an empty file is a valid config. Unknown keys are
 * errors, because a misspelt key silently falling back to its default is worse.
 */
export const configSchema = z
  .strictObject({
    data_dir: z
      .string()
      .min(1)
      .default('.codefleet-data')
      .describe(
        'Directory for the local queue, the run store and caches; relative to the config file (or the working directory).',
      ),
    allow_insecure_redis: z
      .boolean()
      .default(false)
      .describe(
        'Accept a Redis URL (queue.bullmq.url, queue.sqs.coordination_url, store.redis_url) to another host without a password. Off: such a URL stops the worker and every command at start, since anyone who reaches that Redis can forge jobs.',
      ),
    queue: queueSchema,
    store: storeSchema,
    workspace: workspaceSchema,
    agents: agentsSchema,
    costs: costsSchema,
    worker: workerSchema,
    verification: verificationSchema,
    sandbox: sandboxSchema,
    signing: signingSchema,
    patch: patchSchema,
    forge: forgeSchema,
    router: routerSchema,
    slack: slackSchema,
    line: lineSchema,
    http_api: httpApiSchema,
    dashboard: dashboardSchema,
    serve: serveSchema,
    logging: loggingSchema,
  })
  .describe(
    'codefleet configuration (config.yaml). String values may use ${VAR} and ${VAR:-default}; $${ is a literal ${.',
  );

/** What the schema step produces, before normalize fills in derived values. */
export type ParsedConfig = z.output<typeof configSchema>;

export { AGENT_NAMES, type AgentName } from './agents.js';
export { ROUTES, type RouteName } from './chat.js';
export { LOG_LEVELS } from './logging.js';
export { SANDBOX_MODES } from './sandbox.js';
