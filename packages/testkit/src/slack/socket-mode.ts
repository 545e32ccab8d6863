import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';

/**
 * The Socket Mode half of the Slack STAND-IN: the WebSocket behind the URL that
 * `apps.connections.open` hands out. As Slack does, it greets a new connection with
 * `hello`, sends envelopes `{ envelope_id, type, payload, accepts_response_payload,
 * retry_attempt, retry_reason }`, expects each acknowledged with `{ envelope_id }`, resends
 * an unacknowledged `events_api` envelope (up to 3 retries, `retry_reason: 'timeout'`), and
 * can ask the client to reconnect with `disconnect`.
 */

/** One envelope sent, and whether the app acknowledged it. */
export interface SentEnvelope {
  envelope_id: string;
  type: string;
  retry_attempt: number;
  acked: boolean;
  /** What the ack carried back (`payload`), when anything. */
  ackPayload?: unknown;
}

/** Options of one delivery. */
export interface SocketDeliveryOptions {
  /**
   * Redeliveries to send even though the app acknowledged (Slack does this when the ack
   * came late); they carry the same payload with `retry_attempt` 1, 2, 3.
   */
  retries?: number;
  /**
   * How long to wait for each ack before redelivering (Slack: 3 s), or for the ack of each
   * `retry_attempt`: a test can wait briefly for an ack that must not come and long for
   * one that must.
   */
  ackTimeoutMs?: number | ((attempt: number) => number);
}

/** Slack retries an event at most three times. */
const maxRetries = 3;

export class SocketModeHub {
  readonly #wss = new WebSocketServer({ noServer: true });
  readonly #tickets = new Set<string>();
  readonly #open = new Set<WebSocket>();
  readonly #waiting = new Map<string, (payload: unknown) => void>();
  readonly #pinger: NodeJS.Timeout;
  /** Every envelope sent, in order. */
  readonly sent: SentEnvelope[] = [];
  /** How many connections were ever opened (a reconnect adds one). */
  opened = 0;

  constructor(private readonly appId: string) {
    // Slack pings open connections; the SDK reconnects when it hears nothing for 30 s.
    this.#pinger = setInterval(() => {
      for (const ws of this.#open) ws.ping();
    }, 5_000);
    this.#pinger.unref();
  }

  /** A fresh single-use connection URL under `base` (`ws://127.0.0.1:<port>`). */
  issueUrl(base: string): string {
    const ticket = randomUUID();
    this.#tickets.add(ticket);
    return `${base}/link/?ticket=${ticket}&app_id=${this.appId}`;
  }

  get connections(): number {
    return this.#open.size;
  }

  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const url = new URL(req.url ?? '/', 'ws://localhost');
    const ticket = url.searchParams.get('ticket') ?? '';
    if (url.pathname !== '/link/' || !this.#tickets.delete(ticket)) {
      socket.end('HTTP/1.1 401 Unauthorized\r\nConnection: close\r\n\r\n');
      return;
    }
    this.#wss.handleUpgrade(req, socket, head, (ws) => {
      this.opened += 1;
      this.#open.add(ws);
      ws.on('close', () => this.#open.delete(ws));
      ws.on('message', (data) => this.#onMessage(String(data)));
      ws.send(
        JSON.stringify({
          type: 'hello',
          num_connections: this.#open.size,
          debug_info: { host: 'standin', approximate_connection_time: 18060 },
          connection_info: { app_id: this.appId },
        }),
      );
    });
  }

  #onMessage(text: string): void {
    let message: { envelope_id?: unknown; payload?: unknown };
    try {
      message = JSON.parse(text) as typeof message;
    } catch {
      return;
    }
    if (typeof message.envelope_id !== 'string') return;
    const sent = this.sent.find((s) => s.envelope_id === message.envelope_id);
    if (sent !== undefined) {
      sent.acked = true;
      if (message.payload !== undefined) sent.ackPayload = message.payload;
    }
    this.#waiting.get(message.envelope_id)?.(message.payload);
  }

  #send(type: string, payload: unknown, attempt: number, reason: string): SentEnvelope {
    const ws = [...this.#open][0];
    if (ws === undefined) throw new Error('Slack stand-in: no Socket Mode connection is open');
    const envelope: SentEnvelope = { envelope_id: randomUUID(), type, retry_attempt: attempt, acked: false };
    this.sent.push(envelope);
    ws.send(
      JSON.stringify({
        envelope_id: envelope.envelope_id,
        type,
        payload,
        accepts_response_payload: type !== 'events_api',
        ...(type === 'events_api' ? { retry_attempt: attempt, retry_reason: reason } : {}),
      }),
    );
    return envelope;
  }

  #acked(envelopeId: string, timeoutMs: number): Promise<boolean> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#waiting.delete(envelopeId);
        resolve(false);
      }, timeoutMs);
      this.#waiting.set(envelopeId, () => {
        clearTimeout(timer);
        this.#waiting.delete(envelopeId);
        resolve(true);
      });
    });
  }

  /**
   * Sends `payload` as an envelope of `type` and waits for its ack; an unacknowledged
   * `events_api` envelope is resent (Slack's retry), and `retries` forces redeliveries.
   * Resolves every envelope sent for it.
   */
  async deliver(type: string, payload: unknown, options: SocketDeliveryOptions = {}): Promise<SentEnvelope[]> {
    const forced = Math.min(options.retries ?? 0, maxRetries);
    const ackTimeoutMs = options.ackTimeoutMs ?? 3_000;
    const timeoutMs = typeof ackTimeoutMs === 'number' ? () => ackTimeoutMs : ackTimeoutMs;
    const envelopes: SentEnvelope[] = [];
    for (let attempt = 0; ; attempt += 1) {
      const reason = attempt === 0 ? '' : 'timeout';
      const envelope = this.#send(type, payload, attempt, reason);
      envelopes.push(envelope);
      const acked = envelope.acked || (await this.#acked(envelope.envelope_id, timeoutMs(attempt)));
      const again = attempt < forced || (!acked && type === 'events_api' && attempt < maxRetries);
      if (!again) return envelopes;
    }
  }

  /** Asks every connection to reconnect, as Slack does before recycling a host. */
  disconnect(reason = 'refresh_requested'): void {
    for (const ws of this.#open)
      ws.send(JSON.stringify({ type: 'disconnect', reason, debug_info: { host: 'standin' } }));
  }

  async close(): Promise<void> {
    clearInterval(this.#pinger);
    for (const ws of this.#open) ws.terminate();
    await new Promise<void>((resolve) => this.#wss.close(() => resolve()));
  }
}
