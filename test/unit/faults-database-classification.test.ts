import { expect } from 'chai';
import { isConnectionFailure, isStatementTimeout, toDependencyError } from '../../src/data/connection-failures.js';
import { DependencyUnavailableError } from '../../src/platform/errors.js';

const withCode = (code: string, cause?: unknown) =>
  Object.assign(new Error('any text'), { code }, cause ? { cause } : {});

describe('faults: which database errors mean the database is unavailable', () => {
  it('a lost session or an unreachable server is a connection failure; a mistake in the statement is not', () => {
    for (const code of [
      '08006',
      '08003',
      '08P01',
      '57P01',
      '57P02',
      '57P03',
      '53300',
      '25P03',
      'ECONNREFUSED',
      'ECONNRESET',
      'EPIPE',
      'ETIMEDOUT',
    ]) {
      expect(isConnectionFailure(withCode(code)), code).to.equal(true);
    }
    for (const code of ['23505', '40001', '40P01', '55P03', '42601', '57014', '0800', 'ENOENT']) {
      expect(isConnectionFailure(withCode(code)), code).to.equal(false);
    }
  });

  it('a socket error wrapped in another error (a connection timeout) is recognised through its cause', () => {
    expect(
      isConnectionFailure(
        new Error('Connection terminated due to connection timeout', { cause: withCode('ECONNRESET') }),
      ),
    ).to.equal(true);
  });

  it('an error is never recognised by its message: text alone says nothing', () => {
    expect(isConnectionFailure(new Error('Connection terminated unexpectedly'))).to.equal(false);
  });

  it('a statement timeout and a lost connection become 503 dependency_unavailable with Retry-After; other errors pass unchanged', () => {
    expect(isStatementTimeout(withCode('57014'))).to.equal(true);
    for (const err of [withCode('57014'), withCode('57P01')]) {
      const mapped = toDependencyError(err);
      expect(mapped).to.be.instanceOf(DependencyUnavailableError);
      expect(mapped).to.include({ status: 503, code: 'dependency_unavailable' });
      expect((mapped as DependencyUnavailableError).retryAfterSeconds).to.be.greaterThan(0);
      expect((mapped as DependencyUnavailableError).cause).to.equal(err);
    }
    const unique = withCode('23505');
    expect(toDependencyError(unique)).to.equal(unique);
  });
});
