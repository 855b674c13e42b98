/**
 * Where the test suite finds the real services. Defaults are this machine's (and CI's):
 * PostgreSQL with trust auth on 5432 and Redis on 6379, both started by .ci/run when absent.
 */
export const TEST_PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
