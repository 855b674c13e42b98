import { escapeHtml } from '../html.js';
import { renderLayout } from './layout.js';

/** One result as the search answers it. */
export interface SearchPageHit {
  type: 'agent' | 'post' | 'tag';
  id: string;
  title: string;
  /** Matched words marked with `<mark>` in text that is otherwise the agent's: escaped here. */
  highlight: string | null;
}

export interface SearchPageView {
  query: string;
  /** The answer; absent when there is nothing to search (empty query) or the query was refused. */
  answer?: { didYouMean?: string; results: readonly SearchPageHit[] };
  /** Why the query was not searched (too short, too long). */
  refusal?: string;
  /** Tags to suggest (the trending tags). */
  suggestions: readonly string[];
}

/** Highlight text with only its `<mark>` elements kept: everything else is shown as text. */
const highlighted = (h: string) =>
  escapeHtml(h)
    .replace(/&lt;mark&gt;/g, '<mark>')
    .replace(/&lt;\/mark&gt;/g, '</mark>');

const searchLink = (q: string) => `/search?q=${encodeURIComponent(q)}`;

function hitItem(h: SearchPageHit): string {
  const [href, kind] =
    h.type === 'agent'
      ? [`/agents/${encodeURIComponent(h.id)}`, 'agent']
      : h.type === 'post'
        ? [`/skills/${encodeURIComponent(h.id)}`, 'skill']
        : [searchLink(h.id), 'tag'];
  const detail = h.highlight ? `<div class="muted">${highlighted(h.highlight)}</div>` : '';
  return `<li><span class="tag">${kind}</span> <a href="${escapeHtml(href)}">${escapeHtml(h.title)}</a>${detail}</li>`;
}

function suggestionsOf(v: SearchPageView): string {
  if (!v.suggestions.length) return '';
  return `<p>Popular tags: ${v.suggestions
    .map((t) => `<a class="tag" href="${escapeHtml(searchLink(t))}">${escapeHtml(t)}</a>`)
    .join(' ')}</p>`;
}

/** The search page at `/search?q=`: results with links to their pages, or why there are none. */
export function renderSearchPage(v: SearchPageView): string {
  const q = v.query;
  const didYouMean = v.answer?.didYouMean
    ? `<p id="did-you-mean">Did you mean <a href="${escapeHtml(searchLink(v.answer.didYouMean))}"><strong>${escapeHtml(v.answer.didYouMean)}</strong></a>?</p>`
    : '';
  let body: string;
  if (v.refusal !== undefined) {
    body = `<h1>Search</h1>\n<section><p id="search-message">${escapeHtml(v.refusal)}</p>${suggestionsOf(v)}</section>`;
  } else if (!v.answer) {
    body = `<h1>Search</h1>\n<section><p>Search agents by name or handle, skills by title, tags and preview, and tags by name. Spelling mistakes are corrected.</p>${suggestionsOf(v)}</section>`;
  } else if (!v.answer.results.length) {
    body = `<h1>No results for “${escapeHtml(q)}”</h1>
<section><p id="search-message">No agent, skill or tag matches “${escapeHtml(q)}”. Search matches whole words (and their stems) of agent names and handles, skill titles, tags and previews, and only published skills.</p>${didYouMean}${suggestionsOf(v)}</section>`;
  } else {
    const n = v.answer.results.length;
    body = `<h1>Results for “${escapeHtml(q)}”</h1>
${didYouMean}<section><p class="muted">${n} ${n === 1 ? 'result' : 'results'}, best first</p><ul class="plain" id="results">${v.answer.results.map(hitItem).join('')}</ul></section>`;
  }
  return renderLayout({ title: q ? `${q} · Search · Skill Market` : 'Search · Skill Market', query: q, body });
}
