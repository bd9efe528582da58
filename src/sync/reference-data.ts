/**
 * Reference data (countries, states, sub-categories) is written once per run, by whichever
 * credential gets there first. A credential arriving while that attempt is in flight waits
 * for it; if it failed, the next credential tries again. Only a run where no attempt
 * succeeded is partial.
 */
import type { Kysely } from 'kysely';
import type { Country, Credential, State } from '../api/index.ts';
import { listCountries, listStates, listSubCategories } from '../api/index.ts';
import type { Logger } from '../log.ts';
import type { Database } from '../warehouse/database.ts';
import { timeoutsOf } from '../warehouse/driver/connection.ts';
import { isWarehouseGone, WarehouseGoneError } from '../warehouse/driver/outage.ts';
import { writeReferenceData } from '../warehouse/tables/reference-data.ts';
import { mergeWriteStats } from '../warehouse/write/snapshot.ts';
import { quarantineRejected, type RunContext } from './run-context.ts';
import { errorText } from './stats.ts';

/** Reads the reference data with `credential` and writes it. */
export async function syncReferenceData(
  context: RunContext,
  credential: Credential,
): Promise<void> {
  const { api } = context.options;
  const { call, inFlight } = context;
  const [countries, subCategories] = await Promise.all([
    inFlight.track(listCountries(api, credential, call)),
    inFlight.track(listSubCategories(api, credential, call)),
  ]);
  const stateLists = await Promise.all(
    countries.records.map(async (country: Country) => ({
      country,
      result: await inFlight.track(listStates(api, credential, country.id, call)),
    })),
  );
  const states: State[] = stateLists.flatMap(({ result }) => result.records);
  await quarantineRejected(context, credential, 'countries', countries.rejected);
  await quarantineRejected(context, credential, 'sub_categories', subCategories.rejected);
  for (const { country, result } of stateLists) {
    await quarantineRejected(context, credential, `states:${country.id}`, result.rejected);
  }
  const written = await writeReferenceData(context.options.warehouse.db, {
    countries: countries.records,
    states,
    subCategories: subCategories.records,
  });
  mergeWriteStats(context.stats.tables, written);
}

export interface ReferenceDataOnce {
  /** Writes the reference data unless done (or not asked for); never rejects but for an outage. */
  write(credential: Credential): Promise<void>;
  /** True once an attempt succeeded, or when the run does not read reference data. */
  done(): boolean;
  /** The latest failed attempt, for the run's failures. */
  failure(): { credential: string; reason: string } | undefined;
}

/**
 * The once-per-run guard around `attempt`. A failed attempt is logged and remembered; an
 * outage of the warehouse rejects with `WarehouseGoneError`.
 */
export function referenceDataOnce(
  needed: boolean,
  attempt: (credential: Credential) => Promise<void>,
  log: Logger,
  db: Kysely<Database>,
): ReferenceDataOnce {
  let done = !needed;
  let inFlight: Promise<boolean> | undefined;
  let failure: { credential: string; reason: string } | undefined;
  const tryOnce = (credential: Credential): Promise<boolean> =>
    attempt(credential).then(
      () => {
        done = true;
        return true;
      },
      (error: unknown) => {
        if (isWarehouseGone(error)) throw new WarehouseGoneError(error, timeoutsOf(db));
        failure = { credential: credential.name, reason: errorText(error) };
        log.warn(
          { credential: credential.name, err: error },
          'reference data failed; another credential will try',
        );
        return false;
      },
    );
  return {
    async write(credential) {
      while (!done) {
        if (inFlight) {
          // Someone else's attempt: wait for it; if it failed, loop and try ourselves.
          await inFlight;
          continue;
        }
        inFlight = tryOnce(credential).finally(() => {
          inFlight = undefined;
        });
        await inFlight;
        return;
      }
    },
    done: () => done,
    failure: () => failure,
  };
}
