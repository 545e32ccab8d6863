import * as z from 'zod';

/** `serve:` — the one port `codefleet serve` listens on for every inbound surface. */
export const serveSchema = z
  .strictObject({
    port: z
      .number()
      .int()
      .min(0)
      .max(65_535)
      .default(8787)
      .describe(
        "The one port of `codefleet serve`: the GitHub webhook (/webhook), LINE (/line), the HTTP API (/v1), Slack's HTTP events (/slack/events), the dashboard (/), /healthz and /metrics. A surface whose own port is set (forge.github.webhook_port, line.port, http_api.port, slack.port, dashboard.port) listens there instead.",
      ),
    host: z
      .string()
      .min(1)
      .default('127.0.0.1')
      .describe('Address `codefleet serve` binds to; put a TLS proxy in front of what the internet must reach.'),
  })
  .prefault({})
  .describe('`codefleet serve`: one port with a route prefix per producer.');
