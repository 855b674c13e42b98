import { expect } from 'chai';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { run } from '../../src/cli/main.js';
import { registerAgent, type Agent } from '../support/agents.js';
import { balanceOf } from '../support/buyers.js';
import { eventually, startTestService, type TestService } from '../support/service.js';
import { signVersion, skillMd } from '../support/skills.js';

const files = (body: string) => [{ path: 'SKILL.md', content: skillMd('sea-forecast', { body: `# Sea\n${body}\n` }) }];

/** `skill-market update` names the paying agent as install and buy do: its key is read from the agents folder. */
describe('the skill-market client updates with the agent that bought', function () {
  this.timeout(120_000);
  let svc: TestService;
  let origin: string;
  let seller: Agent;
  let postId: string;
  let project: string;
  let buyer: `0x${string}`;

  /** Runs the command line in the project, with no wallet in the environment. */
  async function cli(args: string[]) {
    const out: string[] = [];
    const err: string[] = [];
    const code = await run([...args, '--market', origin], {
      cwd: project,
      env: {},
      out: (l) => out.push(l),
      err: (l) => err.push(l),
    });
    return { code, out: out.join('\n'), err: err.join('\n') };
  }

  const indexLists = (version: number) =>
    eventually(async () => {
      const doc = (await (await fetch(`${origin}/.well-known/agent-skills/index.json`)).json()) as {
        skills: { id: string; versionNumber: number }[];
      };
      return doc.skills.some((s) => s.id === postId && s.versionNumber === version);
    }, 15_000);

  before(async () => {
    svc = await startTestService();
    origin = svc.url.replace('127.0.0.1', 'localhost');
    seller = await registerAgent(svc, 'sea-seller');
    const v1 = files('Read the sea state.');
    const created = await seller.api('/api/posts', {
      method: 'POST',
      json: { title: 'Sea forecast', preview: 'Sea forecasts.', priceAtomic: '500000', body: { files: v1 } },
    });
    expect(created.status).to.equal(201);
    postId = (await created.json()).id;
    const versionSignature = await signVersion(seller.account, { postId, version: 1, name: 'sea-forecast', files: v1 });
    const published = await seller.api(`/api/posts/${postId}/publish`, { method: 'POST', json: { versionSignature } });
    expect(published.status).to.equal(200);
    await indexLists(1);
    // An agent of the agents folder as register leaves it: its file and its key beside it.
    project = mkdtempSync(join(tmpdir(), 'cli-update-'));
    const key = generatePrivateKey();
    buyer = privateKeyToAccount(key).address;
    await svc.service.runtime.chain.faucet!(buyer, 5_000_000n);
    mkdirSync(join(project, '.skill-market'), { mode: 0o700 });
    writeFileSync(join(project, '.skill-market/sailor.key'), `${key}\n`, { mode: 0o600 });
    writeFileSync(
      join(project, '.skill-market/sailor.json'),
      JSON.stringify({ handle: 'sailor', address: buyer, keyFile: 'sailor.key', market: origin }),
      { mode: 0o600 },
    );
  });
  after(async () => {
    await svc?.stop();
    if (project) rmSync(project, { recursive: true, force: true });
  });

  it('when the agent installs a skill, then a new version comes with "update <handle>", without paying again', async () => {
    const bought = await cli(['install', 'sailor', postId]);
    expect(bought.code, bought.err).to.equal(0);
    expect(bought.out).to.contain('bought for 0.5 USDC');
    await eventually(async () => (await balanceOf(svc.service.runtime.chain, buyer)) === 4_500_000n);

    const v2 = files('Version two reads the swell too.');
    const added = await seller.api(`/api/posts/${postId}/versions`, {
      method: 'POST',
      json: {
        body: { files: v2 },
        version: '1.1.0',
        versionSignature: await signVersion(seller.account, { postId, version: 2, name: 'sea-forecast', files: v2 }),
      },
    });
    expect(added.status, await added.clone().text()).to.be.oneOf([200, 201]);
    await indexLists(2);

    const updated = await cli(['update', 'sailor']);
    expect(updated.code, updated.err).to.equal(0);
    expect(updated.out).to.contain('sea-forecast: updated').and.to.contain('read again with the wallet that bought it');
    expect(readFileSync(join(project, '.agents/skills/sea-forecast/SKILL.md'), 'utf8')).to.equal(v2[0]!.content);
    expect(await balanceOf(svc.service.runtime.chain, buyer)).to.equal(4_500_000n);

    const named = await cli(['update', 'sailor', 'sea-forecast']);
    expect(named.code, named.err).to.equal(0);
    expect(named.out).to.contain('sea-forecast: up to date (1.1.0)');
  });

  it('when the name is an installed skill and no agent, then it is the skill; an unknown one says so', async () => {
    const skill = await cli(['update', 'sea-forecast']);
    expect(skill.code, skill.err).to.equal(0);
    expect(skill.out).to.contain('sea-forecast: up to date (1.1.0)');
    const unknown = await cli(['update', 'no-such-thing']);
    expect(unknown.code).to.equal(1);
    expect(unknown.err).to.contain('[not_installed]');
  });

  it('update --help shows the agent form first', async () => {
    const help = await cli(['update', '--help']);
    expect(help.out).to.contain('Usage: skill-market update [options] [handle] [skill]');
    expect(help.out).to.contain('skill-market update alice weather-report');
  });
});
