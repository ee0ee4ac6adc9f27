-- Import templates: versioned template bodies with a public catalog.
--
-- Categories are seeded here and read-only over the API (administrators
-- change them with a migration). Versions are immutable and numbered per
-- template from the template's `next_version` counter, which is bumped in the
-- transaction that inserts the version: numbers are sequential under
-- concurrent writers and never reused after a version is deleted.

CREATE TABLE template_categories (
    id    INTEGER PRIMARY KEY,
    name  TEXT NOT NULL,
    slug  TEXT NOT NULL UNIQUE
);

INSERT INTO template_categories (id, name, slug) VALUES
    (1, 'Databases', 'databases'),
    (2, 'Web', 'web'),
    (3, 'Developer tools', 'devtools'),
    (4, 'Monitoring', 'monitoring'),
    (5, 'Messaging', 'messaging'),
    (6, 'AI', 'ai'),
    (7, 'CMS', 'cms'),
    (8, 'Other', 'other');

CREATE TABLE import_templates (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id    INTEGER NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name          TEXT NOT NULL,
    description   TEXT NOT NULL DEFAULT '',
    category_id   INTEGER NOT NULL REFERENCES template_categories (id),
    next_version  INTEGER NOT NULL DEFAULT 1,
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL,
    UNIQUE (account_id, name)
);
CREATE INDEX import_templates_category ON import_templates (category_id);

CREATE TABLE import_template_versions (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id     INTEGER NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    template_id    INTEGER NOT NULL REFERENCES import_templates (id) ON DELETE CASCADE,
    version        INTEGER NOT NULL,
    template_body  TEXT NOT NULL,
    variables      TEXT NOT NULL DEFAULT '{}',
    public         INTEGER NOT NULL DEFAULT 0,
    created_at     TEXT NOT NULL,
    UNIQUE (template_id, version)
);
CREATE INDEX import_template_versions_public ON import_template_versions (public, template_id);
