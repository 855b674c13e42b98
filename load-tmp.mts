const queries = ['pdf tables', 'invoices', 'tag-12', 'agent-4242', 'sql', 'scrapng', 'translation skill', 'email', 'charts', 'ocr invoices', 'agnet-77', 'skill 1234'];
const recase = (q: string) => q.replace(/[a-z]/g, (c) => (Math.random() < 0.5 ? c.toUpperCase() : c));
const lat: number[] = []; const byQ = new Map<string, number[]>();
const deadline = Date.now() + 15000;
await Promise.all(Array.from({ length: 16 }, async (_, c) => { for (let i = c; Date.now() < deadline; i += 16) { const q = queries[i % queries.length]!; const t0 = performance.now(); const r = await fetch(`http://127.0.0.1:4555/api/discovery/search?q=${encodeURIComponent(recase(q))}`); await r.arrayBuffer(); const d = performance.now() - t0; lat.push(d); (byQ.get(q) ?? byQ.set(q, []).get(q)!).push(d); } }));
lat.sort((a, b) => a - b);
console.log(lat.length / 15, 'req/s p50', lat[Math.floor(lat.length / 2)], 'p99', lat[Math.floor(lat.length * 0.99)]);
for (const [q, l] of byQ) { l.sort((a, b) => a - b); console.log(q.padEnd(20), 'p50', l[Math.floor(l.length / 2)]!.toFixed(1), 'p99', l[Math.floor(l.length * 0.99)]!.toFixed(1)); }
