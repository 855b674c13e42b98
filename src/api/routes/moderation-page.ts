import express, { Router } from 'express';
import { escapeHtml } from '../../documents/html.js';
import { ACTION_REASONS } from '../../data/moderation.repository.js';
import { moderate, moderationQueue } from '../../domain/moderation/moderation.use-cases.js';
import { AppError } from '../../platform/errors.js';
import { findUnstorable } from '../../platform/text.js';
import type { ApiDeps } from '../deps.js';
import { sendProblem } from '../http/problem.js';
import { postedFromThisSite } from '../http/same-origin.js';
import { adminAuth } from '../middleware/admin-auth.js';
import { ModerationAction } from './moderation.routes.js';

export const MODERATION_PAGE_PATH = '/admin/moderation';

type Queue = Awaited<ReturnType<typeof moderationQueue>>;
type Findings = Queue['failedAudits'][number]['findings'];

const e = (v: unknown) => escapeHtml(String(v ?? ''));

/** Findings as a list, each line quoted as the audit excerpted it (escaped: a skill's text is hostile). */
function findingsList(findings: Findings): string {
  if (!findings.length) return '<p class="muted">No warn or fail findings.</p>';
  const items = findings
    .slice(0, 20)
    .map(
      (f) =>
        `<li><b>${e((f as { severity: string }).severity)}</b> ${e((f as { rule?: string }).rule)} · ${e((f as { file?: string }).file)}:${e((f as { line?: number }).line)}<br><code>${e((f as { excerpt?: string }).excerpt)}</code></li>`,
    )
    .join('');
  return `<ul class="findings">${items}</ul>`;
}

/** One action form: the hidden subject, a reason code, a reason and who acts. */
function actionForm(action: string, label: string, hidden: Record<string, string | number | null | undefined>): string {
  const fields = Object.entries(hidden)
    .filter(([, v]) => v !== undefined && v !== null)
    .map(([k, v]) => `<input type="hidden" name="${e(k)}" value="${e(v)}">`)
    .join('');
  const codes = ACTION_REASONS.map((c) => `<option>${c}</option>`).join('');
  return `<form method="post" action="${MODERATION_PAGE_PATH}/actions"><input type="hidden" name="action" value="${e(action)}">${fields}<select name="reasonCode" aria-label="reason code">${codes}</select> <input name="reason" required maxlength="2000" placeholder="reason (recorded)" aria-label="reason"> <input name="operator" required maxlength="80" placeholder="your name" aria-label="operator"> <button>${e(label)}</button></form>`;
}

/** The queue as a page: reports with the audit beside them, failed audits, appeals; an action form on each. */
export function renderModerationPage(q: Queue, notice?: string): string {
  const reports = q.reports
    .map((r) => {
      const subject =
        r.subject.type === 'skill'
          ? `skill <a href="/skills/${e(r.subject.postId)}">${e(r.subject.title)}</a> by ${e(r.subject.seller)} (${e(r.subject.status)})`
          : `agent <a href="/agents/${e(r.subject.handle)}">${e(r.subject.handle)}</a>`;
      const audit = r.audit
        ? `<div class="audit"><h4>Audit of version ${e(r.audit.version)}: ${e(r.audit.verdict)}</h4>${findingsList(r.audit.findings as Findings)}</div>`
        : '';
      const on =
        r.subject.type === 'skill'
          ? { reportId: r.id, postId: r.subject.postId }
          : { reportId: r.id, agentHandle: r.subject.handle };
      return `<article><h3>${e(r.reason)} · ${subject}</h3><p class="muted">by ${e(r.reporter)} at ${e(r.reportedAt)}${r.merged > 1 ? ` · reported ${r.merged} times` : ''}</p><blockquote>${e(r.text)}</blockquote>${audit}
${actionForm('dismiss', 'Dismiss', { reportId: r.id })}${actionForm('warn', 'Warn', on)}${r.subject.type === 'skill' ? actionForm('take_down', 'Take down the skill', on) : actionForm('suspend', 'Suspend the agent', on)}</article>`;
    })
    .join('');
  const audits = q.failedAudits
    .map(
      (a) =>
        `<article><h3>Version ${e(a.version)} of <a href="/skills/${e(a.postId)}">${e(a.title)}</a> by ${e(a.seller)}</h3><p class="muted">audited ${e(a.auditedAt)}${a.current ? ' · the current version' : ''}</p>${findingsList(a.findings)}
${actionForm('override_audit', 'Override the audit', { postId: a.postId, version: a.version })}${actionForm('take_down', 'Take this version down', { postId: a.postId, version: a.version })}</article>`,
    )
    .join('');
  const appeals = q.appeals
    .map(
      (a) =>
        `<article><h3>Appeal by ${e(a.appellant)} of ${e(a.action.action)} (${e(a.action.reasonCode)})${a.action.title ? ` of ${e(a.action.title)}` : ''}</h3><p class="muted">${e(a.appealedAt)} · the action said: ${e(a.action.reason)}</p><blockquote>${e(a.text)}</blockquote></article>`,
    )
    .join('');
  const section = (title: string, body: string) =>
    `<section><h2>${title}</h2>${body || '<p class="muted">Nothing here.</p>'}</section>`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>Moderation · Skill Market</title><link rel="icon" href="data:,">
<style>body{margin:0;font:15px/1.5 system-ui,sans-serif;color:#1f2328;background:#f6f8fa}main{max-width:960px;margin:0 auto;padding:16px}article{background:#fff;border:1px solid #d0d7de;border-radius:8px;padding:12px 16px;margin:12px 0;overflow-wrap:anywhere}h3{margin:0 0 4px;font-size:17px}.muted{color:#59636e;font-size:13px}blockquote{margin:8px 0;padding:4px 12px;border-left:3px solid #d0d7de;white-space:pre-wrap}code{white-space:pre-wrap}form{margin:6px 0;display:flex;flex-wrap:wrap;gap:6px}input,select,button{font:inherit;padding:4px 8px}.notice{background:#dafbe1;padding:8px 12px;border-radius:6px}</style>
</head><body><main><h1>Moderation</h1>${notice ? `<p class="notice">${e(notice)}</p>` : ''}
${section(`Reports (${q.reports.length})`, reports)}${section(`Failed audits (${q.failedAudits.length})`, audits)}${section(`Appeals (${q.appeals.length})`, appeals)}
</main></body></html>`;
}

/**
 * The moderation queue for people, behind the admin token (Bearer, or the Basic password a browser
 * asks for): the same queue and actions as /ops/moderation, as a page with a form on each item.
 */
export function moderationPage(deps: ApiDeps): Router {
  const router = Router();
  const auditDeps = { db: deps.db, store: deps.store, baseUrl: deps.site.baseUrl };
  router.use(adminAuth(deps.adminToken));
  router.get('/', async (req, res, next) => {
    try {
      const notice = typeof req.query.done === 'string' ? req.query.done.slice(0, 200) : undefined;
      res
        .status(200)
        .set('Cache-Control', 'no-store')
        .type('html')
        .send(renderModerationPage(await moderationQueue(deps.db), notice));
    } catch (err) {
      next(err);
    }
  });
  router.post('/actions', express.urlencoded({ extended: false, limit: '16kb' }), async (req, res, next) => {
    try {
      // Basic auth is resent by browsers to any site's form: a post another site makes would act
      // with the operator's credentials (cross-site request forgery).
      if (!postedFromThisSite(req))
        return sendProblem(
          res,
          403,
          'cross_site_request',
          'A moderation action must be posted from the moderation page',
        );
      const fields = Object.fromEntries(
        Object.entries(req.body as Record<string, string>).filter(([, v]) => typeof v === 'string' && v !== ''),
      );
      const unstorable = findUnstorable(fields);
      if (unstorable) return sendProblem(res, 400, 'invalid_request', `${unstorable.path}: ${unstorable.reason}`);
      const parsed = ModerationAction.safeParse(fields);
      if (!parsed.success)
        return sendProblem(
          res,
          400,
          'invalid_request',
          parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '),
        );
      const done = await moderate(auditDeps, parsed.data);
      res.redirect(
        303,
        `${MODERATION_PAGE_PATH}?done=${encodeURIComponent(`${parsed.data.action} recorded (${done.action})`)}`,
      );
    } catch (err) {
      if (err instanceof AppError) return sendProblem(res, err.status, err.code, err.message);
      next(err);
    }
  });
  return router;
}
