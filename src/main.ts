import { ConfigError, loadConfig, type Config } from './platform/config.js';
import { createLogger } from './platform/logger.js';
import { RedisUnavailableError } from './platform/redis.js';
import { ROLES, startService, type Role } from './bootstrap/service.js';

const role = (process.argv[2] ?? 'all') as Role;
if (!ROLES.includes(role)) {
  console.error(`Unknown role "${role}". Use one of: ${ROLES.join(', ')}`);
  process.exit(2);
}

let config: Config;
try {
  config = loadConfig();
} catch (err) {
  console.error(err instanceof ConfigError ? err.message : err);
  process.exit(2);
}
const log = createLogger(config.logLevel, { role });

const startedAt = performance.now();
const service = await startService(role, config, log).catch((err) => {
  if (err instanceof ConfigError) {
    console.error(err.message);
    process.exit(2);
  }
  log.fatal({ err }, err instanceof RedisUnavailableError ? err.message : 'start failed');
  process.exit(1);
});
log.info(
  { ms: Math.round(performance.now() - startedAt), url: service.server ? service.runtime.site.baseUrl : undefined },
  `skill-market ${role} started`,
);

let signalled = false;
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    if (signalled) return;
    signalled = true;
    log.info({ signal }, 'shutting down');
    // A hung dependency must not keep the process alive past the deadline an orchestrator waits.
    setTimeout(() => {
      log.error('shutdown deadline passed; exiting');
      process.exit(1);
    }, config.shutdownTimeoutMs).unref();
    service.stop().then(
      () => {
        log.info('stopped cleanly');
        process.exit(0);
      },
      (err) => {
        log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  });
}
