/**
 * `business_answers` becomes one row per business and read (docs/warehouse.md, "Answers
 * applied") instead of a column pair per read (migration 0014): a new stream's reads then
 * add rows, not columns. Each row: the read's name, the `raw_bodies.body_hash` its rows
 * were last written from in full (null: not known), the UTC day a stream that writes a row
 * per day was written for, the write path that wrote it, and when.
 *
 * Filled from the old table: one row per read whose body was known. The table is internal
 * (not for BI): the old one is dropped, and the new one takes its name.
 *
 * Never edit this file once it has landed: add a later migration instead.
 */
import { type Kysely, sql } from 'kysely';

/** The reads of migration 0014's columns, with the day column of the two daily ones. */
const READS = [
  ['business', null],
  ['listings', 'listings_on'],
  ['reviews', null],
  ['socials', null],
  ['rankings', 'rankings_on'],
  ['keywords', null],
] as const;

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('business_answer_reads')
    .addColumn('business_id', 'bigint', (c) =>
      c.notNull().references('businesses.business_id').onDelete('cascade'),
    )
    .addColumn('read', 'text', (c) => c.notNull())
    .addColumn('body_hash', 'text')
    .addColumn('applied_on', 'date')
    .addColumn('applied_by', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
    .addPrimaryKeyConstraint('business_answer_reads_pkey', ['business_id', 'read'])
    .execute();
  const reads = sql.join(
    READS.map(
      ([read, day]) =>
        sql`(${sql.lit(read)}, a.${sql.id(`${read}_hash`)}, ${day ? sql`a.${sql.id(day)}` : sql`null::date`})`,
    ),
  );
  await sql`
    insert into business_answer_reads (business_id, read, body_hash, applied_on, applied_by,
      updated_at)
    select a.business_id, r.read, r.body_hash, r.applied_on, a.applied_by, a.updated_at
    from business_answers a
    cross join lateral (values ${reads}) as r(read, body_hash, applied_on)
    where r.body_hash is not null
    order by a.business_id, r.read`.execute(db);
  await db.schema.dropTable('business_answers').execute();
  await renameTable(db, 'business_answer_reads', 'business_answers');
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('business_answer_columns')
    .addColumn('business_id', 'bigint', (c) =>
      c.notNull().references('businesses.business_id').onDelete('cascade'),
    )
    .addColumn('applied_by', 'text', (c) => c.notNull())
    .addColumn('business_hash', 'text')
    .addColumn('listings_hash', 'text')
    .addColumn('listings_on', 'date')
    .addColumn('reviews_hash', 'text')
    .addColumn('socials_hash', 'text')
    .addColumn('rankings_hash', 'text')
    .addColumn('rankings_on', 'date')
    .addColumn('keywords_hash', 'text')
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
    .addPrimaryKeyConstraint('business_answer_columns_pkey', ['business_id'])
    .execute();
  // One row per business, under the write path of its latest row: a read another write
  // path recorded is not known to this one.
  const columns = READS.flatMap(([read, day]) => [
    sql`max(a.body_hash) filter (where a.read = ${sql.lit(read)})`,
    ...(day ? [sql`max(a.applied_on) filter (where a.read = ${sql.lit(read)})`] : []),
  ]);
  const names = READS.flatMap(([read, day]) => [
    sql.id(`${read}_hash`),
    ...(day ? [sql.id(day)] : []),
  ]);
  await sql`
    insert into business_answer_columns (business_id, applied_by, ${sql.join(names)}, updated_at)
    select a.business_id, latest.applied_by, ${sql.join(columns)}, max(a.updated_at)
    from business_answers a
    join (select distinct on (business_id) business_id, applied_by from business_answers
      order by business_id, updated_at desc) latest
      on latest.business_id = a.business_id and latest.applied_by = a.applied_by
    group by a.business_id, latest.applied_by`.execute(db);
  await db.schema.dropTable('business_answers').execute();
  await renameTable(db, 'business_answer_columns', 'business_answers');
}

/** Renames a table and its primary key and foreign key, as if it had been created so. */
async function renameTable(db: Kysely<unknown>, from: string, to: string): Promise<void> {
  await sql`alter table ${sql.id(from)} rename to ${sql.id(to)}`.execute(db);
  await sql`alter table ${sql.id(to)} rename constraint ${sql.id(`${from}_pkey`)}
    to ${sql.id(`${to}_pkey`)}`.execute(db);
  await sql`alter table ${sql.id(to)} rename constraint ${sql.id(`${from}_business_id_fkey`)}
    to ${sql.id(`${to}_business_id_fkey`)}`.execute(db);
}
