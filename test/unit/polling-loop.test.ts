import { expect } from 'chai';
import { backoff } from '../../src/platform/backoff.js';
import { createLogger } from '../../src/platform/logger.js';
import { startPollingLoop, type PollingLoop, type Sleeper } from '../../workers/polling-loop.js';

const log = createLogger('silent');

/**
 * A clock that never waits: it records each pause the loop asks for and stops the loop after
 * `passes` passes, so a test sees the whole schedule without a real timer.
 */
function recordingClock(passes: number) {
  const pauses: number[] = [];
  let loop: PollingLoop | undefined;
  const sleep: Sleeper = async (ms) => {
    pauses.push(ms);
    if (pauses.length >= passes) void loop?.stop();
  };
  return { pauses, sleep, attach: (l: PollingLoop) => (loop = l) };
}

describe('the polling loop of the worker processes', () => {
  it('when passes fail, waits longer after each failure, and resumes its interval on the first success', async () => {
    const clock = recordingClock(6);
    const outcomes = ['fail', 'fail', 'fail', 'ok', 'fail', 'ok'];
    let calls = 0;
    const loop = startPollingLoop({
      name: 'test loop',
      intervalMs: 100,
      log,
      sleep: clock.sleep,
      pass: async () => {
        if (outcomes[calls++] === 'fail') throw new Error('database down');
        return false;
      },
    });
    clock.attach(loop);
    await loop.done;
    expect(clock.pauses).to.deep.equal([backoff(100, 1), backoff(100, 2), backoff(100, 3), 100, backoff(100, 1), 100]);
    expect(clock.pauses.slice(0, 3)).to.deep.equal([200, 400, 800]);
  });

  it('when a pass says more work is waiting, starts the next one without a pause', async () => {
    const clock = recordingClock(3);
    const more = [true, true, false];
    let calls = 0;
    const loop = startPollingLoop({
      name: 'test loop',
      intervalMs: 100,
      log,
      sleep: clock.sleep,
      pass: async () => more[calls++] ?? false,
    });
    clock.attach(loop);
    await loop.done;
    expect(clock.pauses).to.deep.equal([0, 0, 100]);
  });

  it('when stopped during a pause, ends at once and runs no further pass', async () => {
    let passes = 0;
    let pausing: (() => void) | undefined;
    const paused = new Promise<void>((r) => (pausing = r));
    // A pause that lasts until the loop is stopped: only the abort can end it.
    const sleep: Sleeper = (_ms, signal) =>
      new Promise<void>((resolve) => {
        pausing?.();
        signal.addEventListener('abort', () => resolve(), { once: true });
      });
    const loop = startPollingLoop({
      name: 'test loop',
      intervalMs: 60_000,
      log,
      sleep,
      pass: async () => {
        passes++;
        return false;
      },
    });
    await paused;
    await loop.stop();
    expect(passes).to.equal(1);
  });

  it('when stopped during a pass, lets that pass finish and starts no other', async () => {
    let passes = 0;
    let finishPass: (() => void) | undefined;
    let started: (() => void) | undefined;
    const passStarted = new Promise<void>((r) => (started = r));
    const sleeps: number[] = [];
    const loop = startPollingLoop({
      name: 'test loop',
      intervalMs: 100,
      log,
      sleep: async (ms) => void sleeps.push(ms),
      pass: () =>
        new Promise<boolean>((resolve) => {
          passes++;
          started?.();
          finishPass = () => resolve(false);
        }),
    });
    await passStarted;
    let stopped = false;
    const stopping = loop.stop().then(() => (stopped = true));
    await Promise.resolve();
    expect(stopped, 'stop waits for the pass under way').to.equal(false);
    finishPass?.();
    await stopping;
    expect(passes).to.equal(1);
    expect(sleeps).to.deep.equal([]);
  });
});
