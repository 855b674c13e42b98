/**
 * Whether a payment queued for settlement is recorded as being settled; nothing is sent for it
 * before. Copies of one request each bring the write of their own claim (the claims race for the
 * authorization and exactly one wins): it is recorded once any of those writes is done, and failed
 * only once every one of them has failed. With no write to wait for, it is recorded.
 */
export class RecordState {
  state: 'pending' | 'done' | { failed: unknown } = 'done';
  /** Settles once `state` is no longer pending (as it was when this promise was taken). */
  settled: Promise<void> = Promise.resolve();
  private writing = 0;
  private changed: () => void = () => undefined;

  constructor(write?: Promise<void>) {
    if (write) this.wait(write);
  }

  /** One more request's write for the same payment; nothing more to wait for once one is done. */
  add(write: Promise<void>): void {
    if (this.state !== 'done') this.wait(write);
  }

  private wait(write: Promise<void>): void {
    if (this.state !== 'pending') {
      this.state = 'pending';
      this.settled = new Promise<void>((resolve) => {
        this.changed = resolve;
      });
    }
    this.writing++;
    write.then(
      () => {
        this.writing--;
        this.state = 'done';
        this.changed();
      },
      (failed: unknown) => {
        this.writing--;
        if (this.state !== 'pending' || this.writing > 0) return;
        this.state = { failed };
        this.changed();
      },
    );
  }
}
