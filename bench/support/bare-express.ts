/**
 * The baseline for read throughput: a bare Express route sending fixed bytes with the same headers
 * the service sends, in its own process.  node --import tsx bench/support/bare-express.ts <port> <file> <content-type>
 */
import { readFileSync } from 'node:fs';
import express from 'express';

const [port, file, contentType] = process.argv.slice(2);
const body = readFileSync(file!);
const app = express();
app.get('/bare', (_req, res) => {
  res
    .set({
      'Content-Type': contentType ?? 'application/json',
      'Cache-Control': 'public, max-age=60',
      'Access-Control-Allow-Origin': '*',
    })
    .send(body);
});
app.listen(Number(port), '127.0.0.1', () => console.log('bare express ready'));
