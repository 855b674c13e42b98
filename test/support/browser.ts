import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

/**
 * A real browser for the tests: Debian's chromium driven by playwright-core (no browser download).
 * Every page a test opens is watched: a console error, an uncaught exception or a failed request
 * fails the test that opened it, and each test leaves a screenshot in test-artifacts/screenshots.
 */

export const SCREENSHOTS = join(import.meta.dirname, '../../test-artifacts/screenshots');
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    // Root in a container: the sandbox needs user namespaces it may not have.
    args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'],
  });
}

/**
 * Opens a page (in a fresh context unless one is given) and records what goes wrong on it: console
 * errors, page errors, failed requests and answers of 400 or more. `allow` lists the faults a test
 * expects (such as a 404 page it asks for on purpose), matched against the recorded text.
 */
export async function watchedPage(
  browser: Browser,
  opts: { viewport?: { width: number; height: number }; allow?: RegExp[]; context?: BrowserContext } = {},
): Promise<{ page: Page; faults: string[] }> {
  const context =
    opts.context ?? (await browser.newContext({ viewport: opts.viewport ?? { width: 1280, height: 900 } }));
  const page = await context.newPage();
  const faults: string[] = [];
  const allowed = (text: string) => (opts.allow ?? []).some((re) => re.test(text));
  page.on('console', (m) => {
    if (m.type() === 'error' && !allowed(m.text())) faults.push(`console error: ${m.text()}`);
  });
  page.on('pageerror', (e) => faults.push(`page error: ${e.message}`));
  page.on('requestfailed', (r) => {
    const text = `request failed: ${r.url()} (${r.failure()?.errorText})`;
    if (!allowed(text)) faults.push(text);
  });
  page.on('response', (r) => {
    const text = `HTTP ${r.status()}: ${r.url()}`;
    if (r.status() >= 400 && !allowed(text)) faults.push(text);
  });
  return { page, faults };
}

/** Saves a full-page screenshot named after the test; returns its path. */
export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  const file = join(SCREENSHOTS, `${name.replace(/[^a-z0-9-]+/gi, '-').toLowerCase()}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}
