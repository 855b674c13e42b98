import { expect } from 'chai';
import { barChart, horizontalBars, lineChart } from '../../src/documents/pages/analytics-charts.renderer.js';
import { formatUsdc, renderAnalyticsPage } from '../../src/documents/pages/analytics-page.renderer.js';
import { buildAnalyticsDocument } from '../../src/domain/analytics/analytics-document.js';

const HOSTILE = '<script>alert("x")</script>&\'';

describe('the dashboard charts are drawn as SVG on the server', () => {
  it('every label and title is escaped: a skill title cannot inject markup into the chart', () => {
    for (const svg of [
      barChart([{ label: HOSTILE, value: 3 }], { title: HOSTILE }),
      horizontalBars([{ label: HOSTILE, value: 3 }], { title: HOSTILE }),
      lineChart([{ label: HOSTILE, value: 4 }], { title: HOSTILE, min: 1, max: 5 }),
    ]) {
      expect(svg).to.not.contain('<script>');
      expect(svg).to.contain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;');
    }
  });

  it('no data, or only zeros, draws a chart that says so instead of an empty or broken picture', () => {
    for (const svg of [
      barChart([], { title: 'Revenue' }),
      barChart([{ label: 'd', value: 0 }], { title: 'Revenue' }),
      horizontalBars([], { title: 'Funnel' }),
      lineChart([], { title: 'Ratings', min: 1, max: 5 }),
    ]) {
      expect(svg).to.match(/^<svg class="chart [a-z]+ empty" viewBox="0 0 \d+ \d+"/);
      expect(svg).to.contain('No data yet');
      expect(svg).to.not.contain('NaN');
    }
  });

  it('bars scale to the largest value, and each bar states its exact value', () => {
    const svg = barChart(
      [
        { label: 'a', value: 1 },
        { label: 'b', value: 4 },
      ],
      { title: 't', height: 200 },
    );
    const heights = [...svg.matchAll(/<rect x="[\d.]+" y="[\d.]+" width="[\d.]+" height="([\d.]+)"/g)].map((m) =>
      Number(m[1]),
    );
    expect(heights).to.have.length(2);
    expect(heights[1]! / heights[0]!).to.be.closeTo(4, 0.05);
    expect(svg).to.contain('<title>b: 4</title>');
  });

  it('charts scale to their container (a viewBox, no fixed pixel width), so a phone shows them whole', () => {
    const svg = barChart([{ label: 'a', value: 1 }], { title: 't' });
    expect(svg).to.match(/viewBox="0 0 480 200"/);
    expect(svg).to.not.match(/<svg[^>]* width=/);
  });

  it('a rating outside the scale is drawn at its edge, never outside the chart', () => {
    const svg = lineChart([{ label: 'w', value: 9 }], { title: 't', min: 1, max: 5, height: 200 });
    const cy = Number(/cy="([\d.]+)"/.exec(svg)?.[1]);
    expect(cy).to.be.within(0, 200);
  });

  it('USDC amounts are written exactly from atomic units', () => {
    expect(formatUsdc('1500000')).to.equal('1.50');
    expect(formatUsdc('1234567')).to.equal('1.234567');
    expect(formatUsdc('0')).to.equal('0.00');
    expect(formatUsdc(-2_000_000n)).to.equal('-2.00');
  });

  it('the page of a seller with no sales yet renders every chart, empty, with no script of its own', () => {
    const doc = buildAnalyticsDocument(
      {
        agent: { id: '5f0c7a9e-1b2c-4d3e-8f90-a1b2c3d4e5f6', handle: 'new-seller' },
        skills: [],
        counts: [],
        attempts: [],
        sales: [],
        buyers: { total: 0, new: 0 },
        refunds: [],
        ratings: [],
        flushIntervalMs: 5000,
      },
      new Date('2026-11-28T12:00:00Z'),
    );
    const html = renderAnalyticsPage(doc);
    expect(html.match(/<svg class="chart/g)).to.have.length(5);
    expect(html).to.contain('No published skills yet');
    expect(html).to.not.match(/<script>/);
  });
});
