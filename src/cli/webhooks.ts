import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Command } from 'commander';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { ctxOf, type Ctx } from './agent-actions.js';
import { CliError } from './cli-error.js';
import type { CliIo } from './install.js';
import { printableJson, shown } from './terminal-text.js';

/** The most of a delivery the receiver reads: deliveries are small JSON objects. */
const MAX_BODY_BYTES = 256 * 1024;

export interface Listener {
  url: string;
  close(): Promise<void>;
}

/**
 * A local webhook receiver for development: verifies each delivery's Standard Webhooks signature
 * with `secret` (the `standardwebhooks` package, as a real receiver would) and prints it; answers
 * 204 when it verifies, 401 when it does not (the market then retries), 413 past 256 KiB.
 */
export function listenForWebhooks(
  opts: { secret: string; port: number; host: string },
  io: Pick<CliIo, 'out' | 'err'>,
): Promise<Listener> {
  let verifier: Webhook;
  try {
    verifier = new Webhook(opts.secret);
  } catch {
    throw new CliError(
      'invalid_secret',
      'the secret must be the whsec_… the market answered when the endpoint was made',
    );
  }
  const server: Server = createServer((req, res) => {
    if (req.method !== 'POST') return void res.writeHead(405, { allow: 'POST' }).end();
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY_BYTES) {
        res.writeHead(413).end();
        req.destroy();
      } else chunks.push(c);
    });
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const headers = {
        'webhook-id': String(req.headers['webhook-id'] ?? ''),
        'webhook-timestamp': String(req.headers['webhook-timestamp'] ?? ''),
        'webhook-signature': String(req.headers['webhook-signature'] ?? ''),
      };
      try {
        const event = verifier.verify(body, headers) as {
          type?: string;
          sequence?: number;
          timestamp?: string;
          data?: unknown;
        };
        io.out(
          shown`${event.type ?? '?'}  ${headers['webhook-id']}  #${event.sequence ?? '?'}  ${event.timestamp ?? ''}`,
        );
        io.out(printableJson(event.data ?? {}));
        res.writeHead(204).end();
      } catch (err) {
        const why = err instanceof WebhookVerificationError ? err.message : 'unreadable';
        io.err(shown`refused a delivery (${headers['webhook-id'] || 'no webhook-id'}): ${why}`);
        res.writeHead(401, { 'content-type': 'text/plain' }).end('signature not verified');
      }
    });
  });
  return new Promise((resolve, reject) => {
    server.once('error', (err) =>
      reject(new CliError('listen_failed', `cannot listen on ${opts.host}:${opts.port}: ${err.message}`)),
    );
    server.listen(opts.port, opts.host, () => {
      const { port } = server.address() as AddressInfo;
      const host = opts.host.includes(':') ? `[${opts.host}]` : opts.host;
      resolve({
        url: `http://${host}:${port}/`,
        close: () => new Promise<void>((done) => server.close(() => done())),
      });
    });
  });
}

/** The agent's token from the agents folder. */
async function tokenOf(c: Ctx, handle: string): Promise<string> {
  const agent = await c.home.load(handle);
  if (!agent.token)
    throw new CliError('not_logged_in', `@${handle} has no token in ${c.home.dir}: run "skill-market login ${handle}"`);
  return agent.token;
}

interface EndpointView {
  id: string;
  url: string;
  eventTypes: string[];
  status: string;
  disabledReason: string | null;
  secret?: string;
}

/** Adds `skill-market webhooks listen | create | list | delete`. */
export function addWebhookCommands(program: Command, io: CliIo): void {
  const webhooks = program.command('webhooks').description('webhook endpoints of an agent, and a local receiver');

  webhooks
    .command('listen')
    .description(
      'run a receiver on this machine that verifies each delivery (Standard Webhooks) and prints it; register its URL ' +
        'with "webhooks create" on a market that allows loopback endpoints (development)',
    )
    .requiredOption('--secret <whsec>', 'the endpoint secret "webhooks create" printed (whsec_…)')
    .option('--port <n>', 'the port to listen on', '8787')
    .option('--host <address>', 'the address to listen on', '127.0.0.1')
    .action(async (opts: { secret: string; port: string; host: string }) => {
      const listener = await listenForWebhooks({ secret: opts.secret, port: Number(opts.port), host: opts.host }, io);
      io.out(shown`listening on ${listener.url} (Ctrl-C to stop)`);
      await new Promise<void>((resolve) => process.once('SIGINT', () => resolve()));
      await listener.close();
    });

  webhooks
    .command('create')
    .argument('<handle>', 'a logged-in agent')
    .argument('<url>', 'where deliveries go (https, public; http://127.0.0.1 on a development market)')
    .requiredOption('--events <types>', 'comma-separated event types, e.g. sale.settled,review.created')
    .description('add a webhook endpoint; prints its id and its secret (shown once)')
    .action(async (handle: string, url: string, opts: { events: string }, cmd: Command) => {
      const c = ctxOf(io, cmd);
      const e = await c.api.json<EndpointView>('/api/webhooks', {
        token: await tokenOf(c, handle),
        json: {
          url,
          eventTypes: opts.events
            .split(',')
            .map((s) => s.trim())
            .filter(Boolean),
        },
      });
      io.out(shown`endpoint ${e.id} → ${e.url} (${e.eventTypes.join(', ')})`);
      io.out(shown`secret ${e.secret ?? ''}`);
    });

  webhooks
    .command('list')
    .argument('<handle>', 'a logged-in agent')
    .description("list the agent's webhook endpoints")
    .action(async (handle: string, _opts: unknown, cmd: Command) => {
      const c = ctxOf(io, cmd);
      const { endpoints } = await c.api.json<{ endpoints: EndpointView[] }>('/api/webhooks', {
        token: await tokenOf(c, handle),
      });
      if (!endpoints.length) return io.out(shown`@${handle} has no webhook endpoints`);
      for (const e of endpoints)
        io.out(
          shown`${e.id}  ${e.status.padEnd(8)}  ${e.url}  ${e.eventTypes.join(',')}${e.disabledReason ? `  (${e.disabledReason})` : ''}`,
        );
    });

  webhooks
    .command('delete')
    .argument('<handle>', 'a logged-in agent')
    .argument('<id>', 'the endpoint id')
    .description('delete a webhook endpoint; it receives nothing more')
    .action(async (handle: string, id: string, _opts: unknown, cmd: Command) => {
      const c = ctxOf(io, cmd);
      await c.api.send(`/api/webhooks/${encodeURIComponent(id)}`, {
        method: 'DELETE',
        token: await tokenOf(c, handle),
      });
      io.out(shown`deleted ${id}`);
    });
}
