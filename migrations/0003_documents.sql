-- Document files, stored content-addressed: one blob per distinct SHA-256, its bytes in chunks
-- so that no statement carries a whole 10 MB file.
create table blobs (
  sha256 text primary key check (sha256 ~ '^[0-9a-f]{64}$'),
  size_bytes bigint not null check (size_bytes >= 0),
  chunk_count integer not null check (chunk_count >= 0),
  created_at timestamptz not null
);

create table blob_chunks (
  sha256 text not null references blobs (sha256) on delete cascade,
  seq integer not null check (seq >= 0),
  data bytea not null,
  primary key (sha256, seq)
);

-- Every file ever uploaded for a document. Exactly one is active; a replace deactivates the
-- previous one and keeps it, with its hash, size, type and times.
create table document_files (
  id uuid primary key,
  document_id uuid not null references documents (id) on delete cascade,
  sha256 text not null references blobs (sha256),
  size_bytes bigint not null,
  content_type text not null check (content_type in ('application/pdf', 'image/jpeg', 'image/png')),
  file_name text not null,
  active boolean not null,
  created_at timestamptz not null,
  deactivated_at timestamptz,
  check (active = (deactivated_at is null))
);
create unique index document_files_one_active on document_files (document_id) where active;
create index document_files_document on document_files (document_id, id);
create index document_files_blob on document_files (sha256);

create index documents_platform on documents (platform_id, id desc);
