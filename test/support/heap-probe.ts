/**
 * Preloaded into a service process by tests (`node --expose-gc --import ./test/support/heap-probe.ts`,
 * see `heapProbe` in service-child.ts): on SIGUSR2 it collects all garbage and writes the heap still
 * in use as one JSON line on stdout. The heap used between collections says how much garbage is
 * waiting; only after a full collection does it say what the process keeps.
 */
process.on('SIGUSR2', () => {
  const gc = (globalThis as { gc?: () => void }).gc;
  // Twice: the first collection's finalizers and weak references free more for the second.
  gc?.();
  gc?.();
  const { heapUsed } = process.memoryUsage();
  process.stdout.write(`${JSON.stringify({ msg: 'heap probe', heapUsed, collected: Boolean(gc) })}\n`);
});
