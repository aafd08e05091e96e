-- One constant sealed under the master key, so that a process given another CORRIDOR_MASTER_KEY
-- stops at start-up (exit 2) instead of starting and sealing what the others cannot open, or
-- failing to open what they sealed. The first start after this migration records the key it was
-- given (platform/crypto/master-key.ts): on a database whose secrets were sealed before it, that
-- key is taken on trust, so start it with the key the running processes have.
create table master_key_check (
  id smallint primary key check (id = 1),
  sealed text not null,
  created_at timestamptz not null default now()
);
