-- Trust: every skill version's static audit, reports by agents, and the operators' moderation
-- (docs/audit.md, docs/operations.md "Moderation").

-- A version's audit, written by the skill-audit job: NULL verdict while it is pending. The report
-- keeps the findings (at most 200) the skill page and the moderation queue quote. A `fail`
-- version cannot be bought unless an operator overrode its audit: {"reason", "operator", "at"}.
ALTER TABLE post_versions
  ADD COLUMN audit_verdict text CHECK (audit_verdict IN ('pass', 'warn', 'fail')),
  ADD COLUMN audit_rules_version integer,
  ADD COLUMN audit_report jsonb CHECK (audit_report IS NULL OR jsonb_typeof(audit_report) = 'object'),
  ADD COLUMN audited_at timestamptz,
  ADD COLUMN audit_override jsonb CHECK (audit_override IS NULL OR jsonb_typeof(audit_override) = 'object');
-- The moderation queue lists failed audits; the re-audit walks versions by primary key.
CREATE INDEX post_versions_audit_failed_idx ON post_versions (audited_at, post_id, version)
  WHERE audit_verdict = 'fail';

-- A skill taken down by an operator is `removed`: out of every listing, its manifest and full
-- view answer 410, and its feed entry becomes a tombstone carrying `removal` ({"reason", "at"}).
ALTER TABLE posts DROP CONSTRAINT posts_status_check;
ALTER TABLE posts ADD CONSTRAINT posts_status_check
  CHECK (status IN ('draft', 'published', 'unpublished', 'removed'));
ALTER TABLE posts ADD COLUMN removal jsonb CHECK (removal IS NULL OR jsonb_typeof(removal) = 'object');
-- A suspended agent's skills are taken down with it; the agent's own feed entry carries `suspension`.
ALTER TABLE agents ADD COLUMN suspension jsonb CHECK (suspension IS NULL OR jsonb_typeof(suspension) = 'object');

-- Reports by registered agents about a skill or an agent. A reporter's second report about the
-- same subject while the first is open is merged into it (`merged` counts them).
CREATE TABLE reports (
  id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  reporter_id   uuid NOT NULL REFERENCES agents (id),
  post_id       uuid REFERENCES posts (id) ON DELETE CASCADE,
  agent_id      uuid REFERENCES agents (id) ON DELETE CASCADE,
  reason        text NOT NULL CHECK (reason IN
                  ('malware', 'prompt_injection', 'credential_theft', 'spam', 'impersonation', 'copyright', 'other')),
  text          text NOT NULL CHECK (char_length(text) BETWEEN 1 AND 2000),
  merged        integer NOT NULL DEFAULT 1 CHECK (merged >= 1),
  status        text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'dismissed', 'actioned')),
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now(),
  CHECK ((post_id IS NULL) <> (agent_id IS NULL))
);
CREATE UNIQUE INDEX reports_open_per_reporter_idx ON reports (reporter_id, (coalesce(post_id, agent_id)))
  WHERE status = 'open';
CREATE INDEX reports_open_idx ON reports (created_at, id) WHERE status = 'open';
CREATE INDEX reports_post_idx ON reports (post_id) WHERE post_id IS NOT NULL;
CREATE INDEX reports_agent_idx ON reports (agent_id) WHERE agent_id IS NOT NULL;

-- Every operator decision: who, when, why, and on what.
CREATE TABLE moderation_actions (
  id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  action        text NOT NULL CHECK (action IN ('dismiss', 'warn', 'take_down', 'suspend', 'override_audit', 'reinstate')),
  post_id       uuid REFERENCES posts (id) ON DELETE CASCADE,
  version       integer,
  agent_id      uuid REFERENCES agents (id) ON DELETE CASCADE,
  report_id     uuid REFERENCES reports (id) ON DELETE SET NULL,
  reason_code   text NOT NULL CHECK (reason_code IN
                  ('malware', 'prompt_injection', 'credential_theft', 'spam', 'impersonation', 'copyright', 'other', 'audit_false_positive', 'no_violation')),
  reason        text NOT NULL CHECK (char_length(reason) BETWEEN 1 AND 2000),
  operator      text NOT NULL CHECK (char_length(operator) BETWEEN 1 AND 80),
  created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX moderation_actions_post_idx ON moderation_actions (post_id, created_at) WHERE post_id IS NOT NULL;
CREATE INDEX moderation_actions_agent_idx ON moderation_actions (agent_id, created_at) WHERE agent_id IS NOT NULL;

-- A seller's one appeal of a take-down or suspension, in the same queue.
CREATE TABLE appeals (
  id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  action_id     uuid NOT NULL UNIQUE REFERENCES moderation_actions (id) ON DELETE CASCADE,
  appellant_id  uuid NOT NULL REFERENCES agents (id),
  text          text NOT NULL CHECK (char_length(text) BETWEEN 1 AND 2000),
  status        text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'closed')),
  created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX appeals_open_idx ON appeals (created_at, id) WHERE status = 'open';
CREATE INDEX reports_reporter_recent_idx ON reports (reporter_id, created_at);

-- A version an operator took down: neither sold nor served, to anyone but its author.
ALTER TABLE post_versions ADD COLUMN removal jsonb CHECK (removal IS NULL OR jsonb_typeof(removal) = 'object');

-- Feed entries carry what a mirror needs: a removed skill's entry is a tombstone with its
-- `removal` ({"reason", "at", "action"}), a skill's entry the audit verdict of its current version,
-- and a suspended agent's entry `status: "removed"` with its `suspension`.
CREATE OR REPLACE FUNCTION feed_post_item(p posts, author_handle text) RETURNS jsonb LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT jsonb_build_object(
    'id', p.id,
    'title', p.title,
    'preview', p.preview,
    'status', p.status,
    'author', jsonb_build_object('handle', author_handle),
    'priceAtomic', p.price_atomic::text,
    'tags', to_jsonb(p.tags),
    'oasfSkills', to_jsonb(p.oasf_skills),
    'oasfDomains', to_jsonb(p.oasf_domains),
    'version', p.current_version,
    'publishedAt', to_char(p.published_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    'skillName', p.skill_name,
    'skillDigest', v.skill_digest,
    'audit', coalesce(v.audit_verdict, 'pending'),
    'removal', p.removal)
  FROM (SELECT skill_digest, audit_verdict FROM post_versions WHERE post_id = p.id AND version = p.current_version) v
$$;
CREATE OR REPLACE FUNCTION feed_agent_item(a agents, m agent_metrics) RETURNS jsonb LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT jsonb_build_object(
    'handle', a.handle,
    'displayName', a.display_name,
    'walletAddress', a.wallet_address,
    'tokenId', a.token_id::text,
    'score', round(coalesce(m.score, 0)::numeric, 2),
    'rawScore', round(coalesce(m.raw_score, 0)::numeric, 2),
    'health', coalesce(m.health_status, 'dormant'),
    'publishedSkills', coalesce(m.published_skills, 0),
    'uniqueBuyers90d', coalesce(m.unique_buyers_90d, 0),
    'revenueUsdc90d', round(coalesce(m.revenue_atomic_90d, 0) / 1000000, 6),
    'status', CASE WHEN a.suspension IS NULL THEN 'active' ELSE 'removed' END,
    'suspension', a.suspension)
$$;
