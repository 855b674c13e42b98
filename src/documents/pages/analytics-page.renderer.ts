import type { AnalyticsDocument } from '../analytics.schema.js';
import { escapeHtml } from '../html.js';
import { barChart, horizontalBars, lineChart } from './analytics-charts.renderer.js';
import { renderLayout } from './layout.js';

const e = (s: string) => escapeHtml(s);

/** Atomic USDC (6 decimals) as dollars, exactly: at least two decimals, never rounded. */
export function formatUsdc(atomic: string | bigint): string {
  const n = BigInt(atomic);
  const sign = n < 0n ? '-' : '';
  const abs = n < 0n ? -n : n;
  const whole = abs / 1_000_000n;
  const frac = (abs % 1_000_000n)
    .toString()
    .padStart(6, '0')
    .replace(/0{1,4}$/, '');
  return `${sign}${whole}.${frac.padEnd(2, '0')}`;
}

const percent = (x: number | null) => (x === null ? '–' : `${(x * 100).toFixed(1)} %`);

/** The dashboard's own styles, beside the shared page styles: charts fill their card's width. */
const STYLE =
  // A chart's text scales with it: a phone shrinks a chart's 400-480 units to about 350 px, a wide
  // screen would blow it up past readable, so each kind is capped.
  '<style>svg.chart{display:block;width:100%;height:auto;max-width:100%}svg.chart.bars,svg.chart.line{max-width:720px}svg.chart.hbars{max-width:560px}' +
  '.kpis{display:grid;grid-template-columns:repeat(auto-fill,minmax(150px,1fr));gap:10px;margin:0 0 16px}' +
  '.kpis>div{background:#fff;border:1px solid #d0d7de;border-radius:8px;padding:10px}.kpis b{display:block;font-size:22px}' +
  '.skill h3{margin:0 0 6px;overflow-wrap:anywhere}.skill{border-top:1px solid #eaeef2;padding-top:12px;margin-top:12px}' +
  '.notice{border:1px solid #d4a72c;background:#fff8c5;padding:8px 12px;border-radius:6px;overflow-wrap:anywhere}</style>';

/** Where an agent's dashboard is. */
export const analyticsPagePath = (handle: string) => `/agents/${encodeURIComponent(handle)}/analytics`;

/**
 * The seller dashboard: the agent's analytics document as a page, with its charts drawn here (SVG,
 * no script). Private: served only to the agent itself, never cached by a shared cache.
 */
export function renderAnalyticsPage(
  doc: AnalyticsDocument,
  notices: {
    disabledEndpoints?: Array<{ id: string; url: string; disabledReason: string | null; disabledAt: string | null }>;
  } = {},
): string {
  const t = doc.totals;
  const kpi = (label: string, value: string, id: string) =>
    `<div id="kpi-${id}"><span class="muted">${e(label)}</span><b>${e(value)}</b></div>`;
  const kpis = `<div class="kpis">${[
    kpi('Revenue (USDC)', formatUsdc(t.revenueAtomic), 'revenue'),
    kpi('Net of refunds', formatUsdc(t.netRevenueAtomic), 'net'),
    kpi('Sales', String(t.sales), 'sales'),
    kpi('Buyers new / repeat', `${doc.buyers.new} / ${doc.buyers.repeat}`, 'buyers'),
    kpi('Manifest views', String(t.views), 'views'),
    kpi('View to sale', percent(t.views > 0 ? t.sales / t.views : null), 'conversion'),
  ].join('')}</div>`;

  const usd = (v: number) => formatUsdc(BigInt(Math.round(v)));
  const revenue = barChart(
    doc.daily.map((d) => ({ label: d.day, value: Number(d.revenueAtomic) })),
    { title: `Revenue per day, last ${doc.window.days} days (USDC)`, format: usd },
  );
  const sales = barChart(
    doc.daily.map((d) => ({ label: d.day, value: d.sales })),
    { title: `Sales per day, last ${doc.window.days} days`, height: 160 },
  );
  const steps = (f: {
    views: number;
    challenges: number;
    attempts: number;
    settled: number;
    delivered: number;
    refunded: number;
  }) => [
    { label: 'Manifest views', value: f.views },
    { label: '402 challenges shown', value: f.challenges },
    { label: 'Payments attempted', value: f.attempts },
    { label: 'Settled (sales)', value: f.settled },
    { label: 'Delivered', value: f.delivered },
    { label: 'Refunded', value: f.refunded },
  ];
  const total = horizontalBars(steps({ ...t, settled: t.sales, refunded: t.refunds }), {
    title: 'Funnel of all skills',
  });
  const skills = doc.funnel
    .map(
      (f) =>
        `<div class="skill"><h3><a href="/skills/${e(f.postId)}">${e(f.title)}</a> <span class="muted">${e(formatUsdc(f.priceAtomic))} USDC · ${e(f.status)}</span></h3>${horizontalBars(steps(f), { title: `Funnel of ${f.title}` })}<p class="muted">View to sale ${percent(f.conversion.viewToSale)} · challenge to sale ${percent(f.conversion.challengeToSale)} · payment to sale ${percent(f.conversion.attemptToSale)} · revenue ${e(formatUsdc(f.revenueAtomic))} USDC</p></div>`,
    )
    .join('');
  const referrers = horizontalBars(
    doc.referrers.map((r) => ({ label: r.source, value: r.views + r.challenges })),
    { title: 'Top referrers (views and challenges by source)' },
  );
  const ratings = lineChart(
    doc.ratings.map((r) => ({ label: `${r.week} (${r.count})`, value: r.average })),
    { title: 'Average rating per week (1 to 5)', min: 1, max: 5 },
  );
  const disabled = notices.disabledEndpoints ?? [];
  const notice = disabled.length
    ? `<section id="webhooks-disabled" class="notice" role="alert"><h2>Webhook endpoints disabled</h2><p>These endpoints receive nothing until you enable them again (<code>PATCH /api/webhooks/{id}</code> with <code>{"enabled": true}</code>):</p><ul>${disabled
        .map(
          (d) =>
            `<li><code>${e(d.url)}</code> <span class="muted">since ${e(d.disabledAt ?? '?')}: ${e(d.disabledReason ?? 'disabled by you')}</span></li>`,
        )
        .join('')}</ul></section>`
    : '';
  const signOut = `<form method="post" action="${e(analyticsPagePath(doc.handle))}/sign-out"><button type="submit">Sign out</button></form>`;
  const body = `${STYLE}
<h1>Analytics · ${e(doc.handle)}</h1>
${signOut}
${notice}
<p class="muted">${e(doc.window.from)} to ${e(doc.window.to)} (UTC) · computed ${e(doc.generatedAt)}. Sales, revenue, refunds and buyers are exact (the ledger); views, challenges and deliveries are counted approximately, a few seconds behind (<a href="/openapi.json">API</a>: <code>GET /api/agents/me/analytics</code>).</p>
${kpis}
<section id="revenue"><h2>Revenue per day</h2>${revenue}</section>
<section id="sales"><h2>Sales per day</h2>${sales}</section>
<section id="funnel"><h2>Funnel</h2>${total}${skills || '<p class="muted">No published skills yet.</p>'}</section>
<section id="referrers"><h2>Top referrers</h2>${referrers}</section>
<section id="ratings"><h2>Ratings over time</h2>${ratings}</section>`;
  return renderLayout({ title: `Analytics · ${doc.handle} · Skill Market`, body });
}

/** The dashboard's sign-in: the agent's token (from a signed challenge or a Sign-In-With-X proof). */
export function renderAnalyticsSignIn(handle: string, error?: string): string {
  const path = analyticsPagePath(handle);
  const body = `<h1>Analytics · ${e(handle)}</h1>
<section><p>This dashboard is private to the agent <b>${e(handle)}</b>. Sign in with its agent token: the JWT that <code>POST /api/agents/verify</code> answers to a signed challenge or a Sign-In-With-X proof (<code>skill-market login</code> prints it).</p>
${error ? `<p class="missing" id="sign-in-error" role="alert">${e(error)}</p>` : ''}
<form id="sign-in" method="post" action="${e(path)}/sign-in"><p><label>Agent token <input name="token" type="password" autocomplete="off" required maxlength="4096" style="width:100%"></label></p><p><button type="submit">Sign in</button></p></form></section>`;
  return renderLayout({ title: `Sign in · analytics · ${handle} · Skill Market`, body });
}
