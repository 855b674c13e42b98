/**
 * Turns a function of many inputs into one of a single input, run once for the calls made in the
 * same turn of the event loop: `many` gets every input given since the last run, in order, and
 * answers one output per input at the same index. The answers of a settlement batch reach their
 * requests in one turn, so what each then writes goes to the database as one statement. When
 * `many` fails, every caller of that run gets its error.
 */
export function coalesced<In, Out>(many: (inputs: In[]) => Promise<Out[]>): (input: In) => Promise<Out> {
  let waiting: Array<{ input: In; resolve(out: Out): void; reject(err: unknown): void }> = [];
  const run = async () => {
    const calls = waiting;
    waiting = [];
    try {
      const outs = await many(calls.map((c) => c.input));
      for (const [i, c] of calls.entries()) c.resolve(outs[i] as Out);
    } catch (err) {
      for (const c of calls) c.reject(err);
    }
  };
  return (input) =>
    new Promise<Out>((resolve, reject) => {
      if (!waiting.length) setImmediate(() => void run());
      waiting.push({ input, resolve, reject });
    });
}
