import { expect } from 'chai';
import { DASHBOARD_COOKIE, SIGN_IN_FAILURES } from '../../src/api/middleware/admin-auth.js';
import { startTestService, TEST_ADMIN_TOKEN, type TestService } from '../support/service.js';

/**
 * The queue dashboard's sign-in form and the abuse cases docs/security.md names for it: a
 * cross-site post, guessing the token, and what a stolen cookie gives.
 */
describe('queue dashboard: sign-in form, session cookie, and its abuse cases', function () {
  this.timeout(60_000);
  let svc: TestService;
  let client = 0;

  before(async () => {
    // Behind a proxy on loopback (as behind the edge): X-Forwarded-For names the client, X-Forwarded-Proto the scheme.
    svc = await startTestService({ TRUST_PROXY: 'loopback' });
  });
  after(async () => svc?.stop());

  /** Each test is its own client, so that one's wrong tokens do not count against another. */
  const newClient = () => `203.0.113.${++client}`;

  const signIn = (token: string, headers: Record<string, string> = {}) =>
    fetch(`${svc.url}/admin/queues/sign-in`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: svc.url, ...headers },
      body: new URLSearchParams({ token }).toString(),
    });
  const dashboard = (headers: Record<string, string>, path = '/admin/queues/') =>
    fetch(`${svc.url}${path}`, { redirect: 'manual', headers });
  const cookieOf = (res: Response) => res.headers.get('set-cookie')?.split(';')[0] ?? '';

  it('a browser without credentials gets the sign-in form, not a Basic prompt; a script still gets problem+json and the Basic challenge', async () => {
    const page = await dashboard({ accept: 'text/html,application/xhtml+xml' });
    expect(page.status).to.equal(401);
    expect(page.headers.get('content-type')).to.match(/^text\/html/);
    expect(page.headers.get('www-authenticate')).to.not.match(/basic/i);
    const html = await page.text();
    expect(html).to.contain('<form method="post" action="/admin/queues/sign-in">');
    expect(html).to.contain('name="token" type="password"');
    const script = await dashboard({ accept: 'application/json' });
    expect(script.status).to.equal(401);
    expect(script.headers.get('www-authenticate')).to.match(/^Basic /);
    expect((await script.json()).code).to.equal('admin_token_required');
  });

  it('Bearer and Basic keep working for scripts', async () => {
    expect((await dashboard({ authorization: `Bearer ${TEST_ADMIN_TOKEN}` })).status).to.equal(200);
    const basic = Buffer.from(`anyone:${TEST_ADMIN_TOKEN}`).toString('base64');
    expect((await dashboard({ authorization: `Basic ${basic}` })).status).to.equal(200);
  });

  it('the right token sets an HttpOnly, SameSite=Strict cookie scoped to the dashboard (Secure over https) that is not the token, and redirects to the dashboard', async () => {
    const ip = newClient();
    // The browser is on the https site the proxy serves: its Origin says so.
    const res = await signIn(TEST_ADMIN_TOKEN, {
      'x-forwarded-for': ip,
      'x-forwarded-proto': 'https',
      origin: svc.url.replace('http:', 'https:'),
    });
    expect(res.status).to.equal(303);
    expect(res.headers.get('location')).to.equal('/admin/queues/');
    const setCookie = res.headers.get('set-cookie') ?? '';
    expect(setCookie).to.match(new RegExp(`^${DASHBOARD_COOKIE}=`));
    expect(setCookie).to.contain('HttpOnly').and.to.contain('SameSite=Strict').and.to.contain('Secure');
    expect(setCookie).to.contain('Path=/admin/queues');
    expect(setCookie).to.not.contain(TEST_ADMIN_TOKEN);
    expect(setCookie).to.not.contain(Buffer.from(TEST_ADMIN_TOKEN).toString('base64'));
    const plain = await signIn(TEST_ADMIN_TOKEN, { 'x-forwarded-for': ip });
    expect(plain.headers.get('set-cookie')).to.not.contain('Secure');

    const cookie = cookieOf(res);
    const page = await dashboard({ cookie, accept: 'text/html' });
    expect(page.status).to.equal(200);
    expect(await page.text()).to.not.contain('action="/admin/queues/sign-in"');
    const api = await dashboard({ cookie }, '/admin/queues/api/queues?activeQueue=&page=1&jobsPerPage=10');
    expect(api.status).to.equal(200);
    expect((await api.json()).queues.length).to.be.greaterThan(0);
  });

  it('a stolen cookie opens the dashboard only: not /metrics, and not once its expiry is rewritten', async () => {
    const cookie = cookieOf(await signIn(TEST_ADMIN_TOKEN, { 'x-forwarded-for': newClient() }));
    expect((await fetch(`${svc.url}/metrics`, { headers: { cookie } })).status).to.equal(401);
    const [name, value] = cookie.split('=') as [string, string];
    const [expiry, mac] = value.split('.') as [string, string];
    const extended = `${name}=${Number(expiry) + 365 * 86400}.${mac}`;
    expect((await dashboard({ cookie: extended, accept: 'text/html' })).status).to.equal(401);
    expect((await dashboard({ cookie: `${name}=${TEST_ADMIN_TOKEN}`, accept: 'text/html' })).status).to.equal(401);
  });

  it('a wrong token shows the form again with the error and sets no cookie', async () => {
    const res = await signIn('not-the-token', { 'x-forwarded-for': newClient() });
    expect(res.status).to.equal(401);
    expect(res.headers.get('set-cookie')).to.equal(null);
    const html = await res.text();
    expect(html).to.contain('<p class="error" id="sign-in-error" role="alert">That is not the admin token.</p>');
    expect(html).to.contain('<form method="post" action="/admin/queues/sign-in">');
  });

  it('a sign-in posted from another site is refused, even with the right token (CSRF)', async () => {
    const ip = newClient();
    const evil = await signIn(TEST_ADMIN_TOKEN, { 'x-forwarded-for': ip, origin: 'https://evil.example' });
    expect(evil.status).to.equal(403);
    expect(evil.headers.get('set-cookie')).to.equal(null);
    expect((await evil.json()).code).to.equal('cross_site_sign_in');
    const fetched = await signIn(TEST_ADMIN_TOKEN, { 'x-forwarded-for': ip, 'sec-fetch-site': 'cross-site' });
    expect(fetched.status).to.equal(403);
  });

  it(`after ${SIGN_IN_FAILURES.points} wrong tokens a client is refused with Retry-After, even with the right one; others are not`, async () => {
    const ip = newClient();
    for (let i = 0; i < SIGN_IN_FAILURES.points; i++)
      expect((await signIn(`guess-${i}`, { 'x-forwarded-for': ip })).status).to.equal(401);
    const blocked = await signIn(TEST_ADMIN_TOKEN, { 'x-forwarded-for': ip });
    expect(blocked.status).to.equal(429);
    expect(Number(blocked.headers.get('retry-after'))).to.be.greaterThan(0);
    expect(blocked.headers.get('set-cookie')).to.equal(null);
    expect(await blocked.text()).to.contain('Too many wrong tokens');
    expect((await signIn(TEST_ADMIN_TOKEN, { 'x-forwarded-for': newClient() })).status).to.equal(303);
  });
});
