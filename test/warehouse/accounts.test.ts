/**
 * `accounts.base_url` keeps a configured base URL without its userinfo (a proxy's
 * `user:password@`): no password reaches a table. The configuration's side is
 * test/config/credential-accounts.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { upsertAccount } from '../../src/warehouse/runs/accounts.ts';
import { createTestWarehouse, type TestWarehouse, testBackends } from '../helpers/database.ts';

describe.each(testBackends)('accounts.base_url (%s)', (backend) => {
  let warehouse: TestWarehouse;
  beforeAll(async () => {
    warehouse = await createTestWarehouse(backend);
  });
  afterAll(async () => {
    await warehouse?.close();
  });

  it('is stored without the userinfo of the configured base URL', async () => {
    await upsertAccount(warehouse.db, {
      name: 'basic-auth',
      userEmail: 'o@x.io',
      baseUrl: 'http://proxy-user:Hid3Me%2F@upstream.example:8443/tenant',
    });
    const row = await warehouse.db
      .selectFrom('accounts')
      .select('base_url')
      .where('name', '=', 'basic-auth')
      .executeTakeFirstOrThrow();
    expect(row.base_url).toBe('http://upstream.example:8443/tenant');
  });
});
