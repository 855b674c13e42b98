import { expect } from 'chai';
import { RenderCache } from '../../src/api/http/render-cache.js';
import { memoizeFor } from '../../src/platform/memoize.js';

/** A clock that moves only when the test moves it, so expiry never depends on how busy the machine is. */
const fakeClock = (start = 1_000_000) => {
  let t = start;
  return {
    now: () => t,
    advance: (ms: number) => {
      t += ms;
    },
  };
};

describe('render cache for shared reads', () => {
  it('renders once per key while fresh, shares concurrent misses, and renders again after the ttl', async () => {
    const clock = fakeClock();
    const cache = new RenderCache(50, undefined, undefined, clock.now);
    let renders = 0;
    const render = async () => `page ${++renders}`;
    const [a, b] = await Promise.all([cache.get('k', render), cache.get('k', render)]);
    expect(renders).to.equal(1);
    expect(a.body.toString()).to.equal('page 1');
    expect(b.etag).to.equal(a.etag);
    expect((await cache.get('other', render)).body.toString()).to.equal('page 2');
    // Fresh up to the last millisecond of its ttl, expired from the ttl on.
    clock.advance(49);
    expect((await cache.get('k', render)).body.toString()).to.equal('page 1');
    clock.advance(1);
    const again = await cache.get('k', render);
    expect(again.body.toString()).to.equal('page 3');
    expect(again.etag).to.not.equal(a.etag);
  });

  it('does not keep a failed render', async () => {
    const cache = new RenderCache(10_000);
    const err = await cache.get('k', async () => Promise.reject(new Error('db down'))).catch((e: Error) => e);
    expect((err as Error).message).to.equal('db down');
    expect((await cache.get('k', async () => 'ok')).body.toString()).to.equal('ok');
  });

  it('evicts the least recently used entries beyond its byte budget', async () => {
    const cache = new RenderCache(10_000, 25);
    await cache.get('a', async () => 'x'.repeat(10));
    await cache.get('b', async () => 'y'.repeat(10));
    await cache.get('a', async () => 'not rendered: a is fresh');
    await cache.get('c', async () => 'z'.repeat(10)); // 30 bytes > 25: b, the least recently used, goes
    let rendered = false;
    await cache.get('b', async () => {
      rendered = true;
      return 'y';
    });
    expect(rendered).to.equal(true);
    expect((await cache.get('a', async () => 'again')).body.toString()).to.equal('x'.repeat(10));
  });

  it('counts only the bytes of entries it holds: a render replaced while in flight adds nothing', async () => {
    const clock = fakeClock();
    const cache = new RenderCache(1, undefined, undefined, clock.now);
    let release!: (v: string) => void;
    const slow = cache.get('k', () => new Promise<string>((r) => (release = r)));
    clock.advance(1); // the in-flight entry expires
    await cache.get('k', async () => 'fresh');
    release('x'.repeat(1000));
    await slow;
    expect(cache.usedBytes).to.equal('fresh'.length);
  });

  it('bounds the number of entries as well as their bytes', async () => {
    const cache = new RenderCache(10_000, 1e9, 3);
    for (const k of ['a', 'b', 'c', 'd']) await cache.get(k, async () => k);
    expect(cache.size).to.equal(3);
  });

  it('memoizeFor asks again only after its window', async () => {
    const clock = fakeClock();
    let reads = 0;
    const read = memoizeFor(40, async () => ++reads, clock.now);
    expect(await read()).to.equal(1);
    clock.advance(39);
    expect(await read()).to.equal(1);
    clock.advance(1);
    expect(await read()).to.equal(2);
    expect(await read()).to.equal(2);
  });

  it('memoizeFor: an older read failing late does not throw away a newer one', async () => {
    const clock = fakeClock();
    let reads = 0;
    let failFirst!: (e: Error) => void;
    const read = memoizeFor(
      50,
      () => (++reads === 1 ? new Promise<number>((_, rej) => (failFirst = rej)) : Promise.resolve(reads)),
      clock.now,
    );
    const first = read().catch(() => 'failed');
    clock.advance(50);
    expect(await read()).to.equal(2);
    failFirst(new Error('late'));
    expect(await first).to.equal('failed');
    expect(await read()).to.equal(2); // still the newer read, within its window
    expect(reads).to.equal(2);
  });
});
