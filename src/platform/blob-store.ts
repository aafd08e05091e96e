import { createReadStream } from 'node:fs';
import { sql } from 'kysely';
import type { DbOrTx, Tx } from './db/database.js';

/** A file already on local disk, with the digest and size measured while it was written. */
export interface LocalFile {
  path: string;
  sha256: string;
  sizeBytes: number;
}

/**
 * Content-addressed file bytes. Writes join the caller's transaction, so a file is stored if and
 * only if the rows that reference it commit; the database implementation keeps the bytes in
 * `blob_chunks`. `put` and `release` run inside that transaction, so they must not wait on
 * another system (on the embedded engine an open transaction holds every request): an
 * object-store implementation would upload before the transaction opens (idempotently, by
 * digest), record the object in `put`, and delete after commit what `release` marked.
 */
export interface BlobStore {
  /** Stores the bytes under their SHA-256 unless already there; safe to repeat. */
  put(trx: Tx, file: LocalFile): Promise<void>;
  /** Streams the bytes of a stored blob; throws if there is none. */
  read(db: DbOrTx, sha256: string): AsyncIterable<Buffer>;
  /** Deletes the bytes unless `stillReferenced` (asked while the blob is locked) says otherwise. */
  release(trx: Tx, sha256: string, stillReferenced: () => Promise<boolean>): Promise<void>;
}

interface BlobsTable {
  sha256: string;
  size_bytes: bigint;
  chunk_count: number;
  created_at: Date;
}

interface BlobChunksTable {
  sha256: string;
  seq: number;
  data: Uint8Array;
}

declare module './db/database.js' {
  interface Database {
    blobs: BlobsTable;
    blob_chunks: BlobChunksTable;
  }
}

/** Each chunk is one row and one statement, so a 10 MB file never sits in one message. */
export const BLOB_CHUNK_BYTES = 256 * 1024;

export class DatabaseBlobStore implements BlobStore {
  constructor(private readonly now: () => Date) {}

  async put(trx: Tx, file: LocalFile): Promise<void> {
    // On conflict the no-op update still locks the row, so a concurrent `release` either ran
    // first (and this insert creates the blob afresh) or waits for this transaction to end.
    const chunkCount = Math.ceil(file.sizeBytes / BLOB_CHUNK_BYTES);
    const { inserted } = await trx
      .insertInto('blobs')
      .values({ sha256: file.sha256, size_bytes: BigInt(file.sizeBytes), chunk_count: chunkCount, created_at: this.now() })
      .onConflict((oc) => oc.column('sha256').doUpdateSet({ created_at: sql`blobs.created_at` }))
      .returning(sql<boolean>`xmax = 0`.as('inserted'))
      .executeTakeFirstOrThrow();
    if (!inserted) return;
    let seq = 0;
    for await (const data of createReadStream(file.path, { highWaterMark: BLOB_CHUNK_BYTES }) as AsyncIterable<Buffer>) {
      await trx.insertInto('blob_chunks').values({ sha256: file.sha256, seq: seq++, data }).execute();
    }
    if (seq !== chunkCount) throw new Error(`blob ${file.sha256}: wrote ${seq} chunks, expected ${chunkCount}`);
  }

  async *read(db: DbOrTx, sha256: string): AsyncIterable<Buffer> {
    const blob = await db.selectFrom('blobs').select('chunk_count').where('sha256', '=', sha256).executeTakeFirst();
    if (!blob) throw new Error(`blob ${sha256} is not stored`);
    for (let seq = 0; seq < blob.chunk_count; seq++) {
      const { data } = await db.selectFrom('blob_chunks').select('data').where('sha256', '=', sha256).where('seq', '=', seq).executeTakeFirstOrThrow();
      yield Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    }
  }

  async release(trx: Tx, sha256: string, stillReferenced: () => Promise<boolean>): Promise<void> {
    const locked = await trx.selectFrom('blobs').select('sha256').where('sha256', '=', sha256).forUpdate().executeTakeFirst();
    if (!locked || (await stillReferenced())) return;
    await trx.deleteFrom('blobs').where('sha256', '=', sha256).execute();
  }
}
