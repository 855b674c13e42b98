-- Skills are Agent Skills (agentskills.io): a folder whose SKILL.md starts with YAML frontmatter
-- naming (`name`, the folder it installs into) and describing the skill. Every version records
-- the sha256 digest of each file and a skill digest over them (the Agent Skills discovery RFC
-- v0.2.0 formula), and may carry its seller's EIP-712 signature over that digest. A purchase
-- records the version and the skill digest it bought. Versions are immutable: a stored version's
-- files, name and digests never change, and its signature, once given, neither.

-- The digests in SQL, byte for byte those of src/domain/skills/skill-digest.ts: sha256 of each
-- file's UTF-8 bytes; the skill digest over the lines `path NUL hex LF` in the order of the
-- paths' UTF-8 bytes. Used to backfill stored versions and to check every version written.
CREATE FUNCTION skill_file_digests(body jsonb) RETURNS jsonb
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT coalesce(
    jsonb_agg(
      jsonb_build_object('path', f ->> 'path', 'digest', 'sha256:' || encode(sha256(convert_to(f ->> 'content', 'UTF8')), 'hex'))
      ORDER BY convert_to(f ->> 'path', 'UTF8')
    ),
    '[]'::jsonb)
  FROM jsonb_array_elements(body -> 'files') AS f
$$;

CREATE FUNCTION skill_digest(body jsonb) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT 'sha256:' || encode(sha256(coalesce(
    string_agg(
      convert_to(f ->> 'path', 'UTF8') || '\x00'::bytea
        || convert_to(encode(sha256(convert_to(f ->> 'content', 'UTF8')), 'hex') || E'\n', 'UTF8'),
      ''::bytea
      ORDER BY convert_to(f ->> 'path', 'UTF8')
    ),
    ''::bytea)), 'hex')
  FROM jsonb_array_elements(body -> 'files') AS f
$$;

ALTER TABLE posts ADD COLUMN skill_name text;
ALTER TABLE post_versions
  ADD COLUMN skill_name text,
  ADD COLUMN file_digests jsonb,
  ADD COLUMN skill_digest text,
  ADD COLUMN signer evm_address,
  ADD COLUMN signature text,
  ADD COLUMN signed_at timestamptz;
ALTER TABLE purchases ADD COLUMN skill_digest text;

-- Existing skills into the format, losing nothing. Each post gets a name: the one its current
-- SKILL.md frontmatter already gives when valid and free among its author's skills, otherwise
-- one made from its title (made unique with -2, -3…). A version whose SKILL.md already has
-- frontmatter with that name and a description is kept byte for byte. Any other SKILL.md gets
-- frontmatter put in front of its whole original text (name, the preview as description, the
-- version label as metadata.version); a version without SKILL.md gets one from the title and
-- preview. Other files and the install manifest are kept as they are.
DO $migrate$
DECLARE
  p record;
  v record;
  base text;
  candidate text;
  n integer;
  skill text;
  front text;
  fm_name text;
  description text;
  header text;
  files jsonb;
BEGIN
  FOR p IN
    SELECT posts.id, posts.author_id, posts.title, posts.preview, posts.current_version
    FROM posts ORDER BY posts.created_at, posts.id
  LOOP
    SELECT f ->> 'content' INTO skill
    FROM post_versions pv, jsonb_array_elements(pv.body -> 'files') AS f
    WHERE pv.post_id = p.id AND pv.version = p.current_version AND f ->> 'path' = 'SKILL.md';
    front := substring(skill FROM '^---\r?\n(.*?)\r?\n---[ \t]*(\r?\n|$)');
    fm_name := substring(front FROM '(?n)^name:[ \t]*["'']?([a-z0-9-]+)["'']?[ \t]*$');
    IF fm_name IS NOT NULL AND char_length(fm_name) <= 64 AND fm_name ~ '^[a-z0-9]+(-[a-z0-9]+)*$'
       AND NOT EXISTS (SELECT 1 FROM posts o WHERE o.author_id = p.author_id AND o.skill_name = fm_name) THEN
      candidate := fm_name;
    ELSE
      base := trim(BOTH '-' FROM regexp_replace(lower(p.title), '[^a-z0-9]+', '-', 'g'));
      base := trim(BOTH '-' FROM left(base, 56));
      IF base = '' THEN base := 'skill'; END IF;
      candidate := base;
      n := 1;
      WHILE EXISTS (SELECT 1 FROM posts o WHERE o.author_id = p.author_id AND o.skill_name = candidate) LOOP
        n := n + 1;
        candidate := base || '-' || n;
      END LOOP;
    END IF;
    UPDATE posts SET skill_name = candidate WHERE id = p.id;

    description := left(regexp_replace(btrim(p.preview), '\s+', ' ', 'g'), 1024);
    IF description = '' THEN description := left(p.title, 1024); END IF;

    FOR v IN SELECT pv.version, pv.version_label, pv.body FROM post_versions pv WHERE pv.post_id = p.id LOOP
      skill := NULL;
      SELECT f ->> 'content' INTO skill FROM jsonb_array_elements(v.body -> 'files') AS f WHERE f ->> 'path' = 'SKILL.md';
      front := substring(skill FROM '^---\r?\n(.*?)\r?\n---[ \t]*(\r?\n|$)');
      fm_name := substring(front FROM '(?n)^name:[ \t]*["'']?([a-z0-9-]+)["'']?[ \t]*$');
      files := v.body -> 'files';
      IF fm_name IS DISTINCT FROM candidate OR front !~ '(?n)^description:[ \t]*\S' THEN
        header := '---' || E'\n' || 'name: ' || candidate || E'\n' || 'description: ' || to_json(description)::text || E'\n'
          || 'metadata:' || E'\n' || '  version: ' || to_json(v.version_label)::text || E'\n' || '---' || E'\n';
        IF skill IS NULL THEN
          files := jsonb_build_array(jsonb_build_object(
            'path', 'SKILL.md',
            'content', header || '# ' || p.title || E'\n\n' || coalesce(nullif(btrim(p.preview), ''), p.title) || E'\n'))
            || files;
        ELSE
          SELECT jsonb_agg(
            CASE WHEN f ->> 'path' = 'SKILL.md'
              THEN jsonb_build_object('path', 'SKILL.md', 'content', header || (f ->> 'content'))
              ELSE f END
            ORDER BY i)
          INTO files
          FROM jsonb_array_elements(v.body -> 'files') WITH ORDINALITY AS e(f, i);
        END IF;
      END IF;
      UPDATE post_versions SET
        skill_name = candidate,
        body = jsonb_build_object('files', files),
        -- The body's measure as the API computes it: the SHA-256 of its JSON text and its UTF-8 bytes.
        body_sha256 = CASE WHEN files = v.body -> 'files' THEN body_sha256 ELSE encode(sha256(convert_to(
          '{"files":[' || (
            SELECT string_agg('{"path":' || to_json(f ->> 'path')::text || ',"content":' || to_json(f ->> 'content')::text || '}', ',' ORDER BY i)
            FROM jsonb_array_elements(files) WITH ORDINALITY AS e(f, i)
          ) || ']}', 'UTF8')), 'hex') END,
        body_bytes = (SELECT coalesce(sum(octet_length(convert_to(f ->> 'content', 'UTF8'))), 0)
                      FROM jsonb_array_elements(files) AS f)
      WHERE post_id = p.id AND version = v.version;
    END LOOP;
  END LOOP;
END
$migrate$;

UPDATE post_versions SET file_digests = skill_file_digests(body), skill_digest = skill_digest(body);
UPDATE purchases SET skill_digest = pv.skill_digest
FROM post_versions pv WHERE pv.post_id = purchases.post_id AND pv.version = purchases.post_version;

ALTER TABLE posts ALTER COLUMN skill_name SET NOT NULL,
  ADD CONSTRAINT posts_skill_name_format CHECK (char_length(skill_name) <= 64 AND skill_name ~ '^[a-z0-9]+(-[a-z0-9]+)*$');
-- One author, one skill per name: the name is the folder a buyer installs it into.
CREATE UNIQUE INDEX posts_author_skill_name_idx ON posts (author_id, skill_name);

ALTER TABLE post_versions
  ALTER COLUMN skill_name SET NOT NULL,
  ALTER COLUMN file_digests SET NOT NULL,
  ALTER COLUMN skill_digest SET NOT NULL,
  -- What is stored is what the files hash to: a version's digests cannot disagree with its files.
  ADD CONSTRAINT post_versions_digests_match CHECK (
    skill_digest = skill_digest(body) AND file_digests = skill_file_digests(body)),
  ADD CONSTRAINT post_versions_signature_whole CHECK (
    (signer IS NULL) = (signature IS NULL) AND (signature IS NULL) = (signed_at IS NULL)),
  ADD CONSTRAINT post_versions_signature_hex CHECK (signature ~ '^0x[0-9a-f]+$');
ALTER TABLE purchases ALTER COLUMN skill_digest SET NOT NULL,
  ADD CONSTRAINT purchases_skill_digest_format CHECK (skill_digest ~ '^sha256:[0-9a-f]{64}$');

-- Immutability: a version's content and digests never change; its signature may be added once.
CREATE FUNCTION post_versions_immutable() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.post_id IS DISTINCT FROM OLD.post_id OR NEW.version IS DISTINCT FROM OLD.version
     OR NEW.version_label IS DISTINCT FROM OLD.version_label OR NEW.body IS DISTINCT FROM OLD.body
     OR NEW.body_sha256 IS DISTINCT FROM OLD.body_sha256 OR NEW.body_bytes IS DISTINCT FROM OLD.body_bytes
     OR NEW.install_manifest IS DISTINCT FROM OLD.install_manifest OR NEW.created_at IS DISTINCT FROM OLD.created_at
     OR NEW.skill_name IS DISTINCT FROM OLD.skill_name OR NEW.file_digests IS DISTINCT FROM OLD.file_digests
     OR NEW.skill_digest IS DISTINCT FROM OLD.skill_digest THEN
    RAISE EXCEPTION 'post version %/% is immutable', OLD.post_id, OLD.version USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  IF OLD.signature IS NOT NULL AND (NEW.signature IS DISTINCT FROM OLD.signature
     OR NEW.signer IS DISTINCT FROM OLD.signer OR NEW.signed_at IS DISTINCT FROM OLD.signed_at) THEN
    RAISE EXCEPTION 'post version %/% is already signed', OLD.post_id, OLD.version USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  RETURN NEW;
END
$$;
CREATE TRIGGER post_versions_immutable BEFORE UPDATE ON post_versions
  FOR EACH ROW EXECUTE FUNCTION post_versions_immutable();

-- A skill's feed entry names its Agent Skill and the skill digest of its current version. Every
-- post was touched above (its name), so the feed indexer reads each again and moves the ones
-- whose item now shows more, as it does for any change.
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
    'skillDigest', (SELECT v.skill_digest FROM post_versions v WHERE v.post_id = p.id AND v.version = p.current_version))
$$;
