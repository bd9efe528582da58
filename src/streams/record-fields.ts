/**
 * The building blocks of the streams' record schemas (the Airbyte catalog's, docs/airbyte.md):
 * records carry the client's normalised values, ISO 8601 text for instants.
 */
import { z } from 'zod';

export const text = z.string();
export const maybeText = z.string().nullable();
export const instant = z.iso.datetime({ offset: true }).nullable();
export const precision = z.enum(['day', 'instant']).nullable();
/** The credential a record was read with: its `name` in the configuration. */
export const account = z.string().describe('the name of the credential the record was read with');
