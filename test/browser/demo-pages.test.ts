import { expect } from 'chai';
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Browser, Page } from 'playwright-core';
import { jobContext } from '../../src/bootstrap/service.js';
import { populationStatsJob } from '../../jobs/population-stats.job.js';
import { launchBrowser, watchedPage } from '../support/browser.js';
import { eventually, startTestService, type TestService } from '../support/service.js';

const ROOT = join(import.meta.dirname, '../..');
const SIZES = { desktop: { width: 1280, height: 800 }, phone: { width: 390, height: 844 } } as const;
/** Screenshots to look at, outside the repository (the demo's pages are not the tests' own). */
const SHOTS = process.env.DEMO_SCREENSHOTS ?? mkdtempSync(join(tmpdir(), 'demo-pages-'));

/**
 * Runs `npm run demo -- --url <service>` against a test service and gives back what it printed.
 * Rankings refresh on the scheduler's minute; the demo waits for them, so the test runs that job
 * the moment the demo says it is waiting.
 */
function runDemoScript(svc: TestService, home: string): Promise<{ status: number | null; stdout: string }> {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      'scripts/demo.ts',
      '--url',
      svc.url,
      '--agents',
      '4',
      '--purchases',
      '6',
      '--seconds',
      '0',
      '--home',
      home,
    ],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let stdout = '';
  let refreshed = false;
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
    if (!refreshed && stdout.includes('refreshing rankings')) {
      refreshed = true;
      void populationStatsJob.run(jobContext(svc.service.runtime), {});
    }
  });
  return new Promise((done) => child.on('close', (status) => done({ status, stdout })));
}

/** The `label  url` lines printed under a heading, up to the next blank line. */
function linksUnder(stdout: string, heading: string): Array<{ label: string; url: string }> {
  const block = stdout.split(heading)[1]?.split('\n\n')[0] ?? '';
  return block
    .split('\n')
    .map((line) => /^ {2}(.+?)\s{2,}(https?:\/\/\S+)$/.exec(line))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ label: m[1]!, url: m[2]! }));
}

/** What a newcomer sees after `npm run demo`: the printed pages, and the buyer it leaves ready. */
describe('browser: the pages the demo prints', function () {
  this.timeout(240_000);
  let svc: TestService;
  let browser: Browser;
  let stdout: string;
  let pages: Array<{ label: string; url: string }>;
  const home = join(mkdtempSync(join(tmpdir(), 'demo-home-')), '.skill-market');

  before(async () => {
    svc = await startTestService();
    const run = await runDemoScript(svc, home);
    stdout = run.stdout;
    expect(run.status, stdout).to.equal(0);
    pages = linksUnder(stdout, 'Open these pages:');
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    await svc?.stop();
  });

  it('prints the pages first (home, the top seller, a skill page, a search), then the JSON', () => {
    const paths = pages.map((p) => new URL(p.url).pathname);
    expect(paths[0]).to.equal('/');
    expect(paths[1]).to.match(/^\/agents\/[a-z0-9-]+$/);
    expect(paths[2]).to.match(/^\/skills\/[0-9a-f-]{36}$/);
    expect(paths.at(-1)).to.equal('/search');
    expect(stdout.indexOf('Open these pages:')).to.be.lessThan(stdout.indexOf('as JSON'));
    const documents = linksUnder(stdout, 'as JSON, for agents:');
    expect(documents.length).to.be.greaterThan(10);
    const urls = documents.map((d) => d.url);
    expect(new Set(urls).size, 'no link is printed twice').to.equal(urls.length);
    const labels = documents.map((d) => d.label);
    expect(new Set(labels).size, 'no two links share a label').to.equal(labels.length);
    expect(labels.filter((l) => /identity/.test(l)).length).to.be.greaterThan(0);
  });

  it('saves a funded, registered buyer and prints the one command that buys and installs a skill with it', async () => {
    const command = /^ {2}npx skill-market --url (\S+) --home (\S+) install (\S+) (\S+)((?: --max-price \S+)?)$/m.exec(
      stdout,
    );
    expect(command, stdout).to.not.equal(null);
    const [, url, agents, handle, postId, maxPrice] = command!;
    expect(url).to.equal(svc.url);
    const keyFile = join(agents!, `${handle}.key`);
    expect(existsSync(keyFile)).to.equal(true);
    expect(statSync(keyFile).mode & 0o777).to.equal(0o600);
    const saved = JSON.parse(readFileSync(keyFile.replace(/\.key$/, '.json'), 'utf8'));
    expect(saved.token).to.be.a('string');

    const dir = mkdtempSync(join(tmpdir(), 'demo-install-'));
    // The command as printed, with a skills folder of the test's own. Not spawnSync: the service
    // answering the client runs in this process.
    const install = await promisify(execFile)(
      process.execPath,
      [
        join(ROOT, 'bin/skill-market.mjs'),
        '--url',
        url!,
        '--home',
        agents!,
        'install',
        handle!,
        postId!,
        '--dir',
        join(dir, 'skills'),
        ...maxPrice!.trim().split(' ').filter(Boolean),
      ],
      { cwd: ROOT, encoding: 'utf8', timeout: 60_000 },
    );
    expect(install.stdout)
      .to.match(/^installed /)
      .and.to.match(/bought for /);
  });

  for (const [size, viewport] of Object.entries(SIZES))
    it(`every printed page opens at ${size} size (${viewport.width}×${viewport.height}) without sideways scroll`, async () => {
      for (const { label, url } of pages) {
        const { page, faults } = await watchedPage(browser, { viewport, allow: [/HTTP 503/] });
        // An agent page is published seconds after its last sale: until then it answers 503.
        await eventually(async () => ((await page.goto(url))?.status() === 200 ? true : undefined), 30_000, 250);
        await page.waitForFunction(() => [...document.images].every((i) => i.complete));
        const file = join(SHOTS, `${size}-${label.replace(/[^a-z0-9]+/gi, '-').toLowerCase()}.png`);
        await page.screenshot({ path: file, fullPage: true });
        expect(await sidewaysScroll(page), `${label} at ${size} (${file})`).to.equal(false);
        await expectWhatANewcomerNeeds(page, new URL(url).pathname);
        expect(faults, label).to.deep.equal([]);
        await page.context().close();
      }
    });
});

/**
 * What a newcomer acts on, on the skill and agent pages the demo prints: the skill's description,
 * its sales and the command that installs it (whole, with a Copy button), its seller's live card;
 * the agent's checklist fixes as commands, one snippet per badge format, its embed card as it shows.
 */
async function expectWhatANewcomerNeeds(page: Page, path: string) {
  if (path.startsWith('/skills/')) {
    expect(await page.textContent('#description')).to.not.equal('');
    expect(await page.textContent('#sales')).to.match(/^\d+ sales? to \d+ buyers? /);
    expect(await page.textContent('#install-command')).to.match(/^npx skill-market install /);
    expect(await page.locator('#install-command + button').isVisible()).to.equal(true);
    // The card's frame loads lazily: as a reader scrolls to it.
    await page.locator('#seller iframe').scrollIntoViewIfNeeded();
    expect(await page.frameLocator('#seller iframe').locator('body').textContent()).to.match(/score \d+\.\d/);
  } else if (path.startsWith('/agents/')) {
    expect(await page.locator('#checklist').textContent()).to.contain('How to fix');
    expect(await page.locator('#badges pre').count()).to.equal(2);
    expect(await page.locator('#badges .snippet button:visible').count()).to.equal(2);
    await page.locator('#embed iframe').scrollIntoViewIfNeeded();
    expect(await page.frameLocator('#embed iframe').locator('h1').textContent()).to.match(/@[a-z0-9-]+/);
  }
}

const sidewaysScroll = (page: Page) =>
  page.evaluate(() => (document.scrollingElement?.scrollWidth ?? 0) > window.innerWidth);
