import { etagOf } from './cache.js';

export interface Rendered {
  body: Buffer;
  etag: string;
}

interface Entry {
  value: Promise<Rendered>;
  expiresAt: number;
  bytes: number;
}

/**
 * A per-process cache of rendered responses whose answer is the same for everyone: feed pages
 * (keyed with a data version, so a change shows as soon as the version moves) and search answers.
 * `ttlMs` bounds staleness of what a key does not cover. Concurrent misses on one key share one
 * render. Bounded by total bytes and entries; least recently used entries go first. `now` is the
 * clock entries expire on (tests pass one they advance by hand).
 */
export class RenderCache {
  private readonly entries = new Map<string, Entry>();
  private bytes = 0;

  constructor(
    private readonly ttlMs: number,
    private readonly maxBytes = 64 * 1024 * 1024,
    /** Also bounds many small entries (keys and bookkeeping are not in the byte count). */
    private readonly maxEntries = 20_000,
    private readonly now: () => number = Date.now,
  ) {}

  get(key: string, render: () => Promise<string>): Promise<Rendered> {
    const now = this.now();
    const hit = this.entries.get(key);
    if (hit && hit.expiresAt > now) {
      // Map order is insertion order: re-inserting marks it most recently used.
      this.entries.delete(key);
      this.entries.set(key, hit);
      return hit.value;
    }
    if (hit) this.drop(key, hit);
    // The callbacks below run after `entry` is made (a promise settles on a later tick).
    const value: Promise<Rendered> = render().then(
      (text) => {
        const body = Buffer.from(text);
        // Counted only while it is still the entry for its key: one evicted or replaced while it
        // rendered was already taken out, and must not be added to the total it left.
        if (this.entries.get(key) === entry) {
          entry.bytes = body.length;
          this.bytes += body.length;
          this.evict();
        }
        return { body, etag: etagOf(body) };
      },
      (err) => {
        if (this.entries.get(key) === entry) this.entries.delete(key);
        throw err;
      },
    );
    const entry: Entry = { value, expiresAt: now + this.ttlMs, bytes: 0 };
    this.entries.set(key, entry);
    return entry.value;
  }

  get size(): number {
    return this.entries.size;
  }

  get usedBytes(): number {
    return this.bytes;
  }

  private drop(key: string, entry: Entry) {
    this.entries.delete(key);
    this.bytes -= entry.bytes;
  }

  private evict() {
    for (const [key, entry] of this.entries) {
      if (this.bytes <= this.maxBytes && this.entries.size <= this.maxEntries) break;
      this.drop(key, entry);
    }
  }
}
