/**
 * How a review response request moves through its states: one step per sandbox day,
 * Created → In Progress → Completed, with a deterministic share ending Failed and some
 * passing through Retry In Progress first (docs/upstream.md, "What the sandbox assumes").
 */
import type { RequestStatus } from './world.ts';

const PATHS: ReadonlyArray<readonly [number, readonly RequestStatus[]]> = [
  [0.65, ['Created', 'In Progress', 'Completed']],
  [0.15, ['Created', 'In Progress', 'Failed']],
  [0.12, ['Created', 'In Progress', 'Retry In Progress', 'Completed']],
  [0.08, ['Created', 'In Progress', 'Retry In Progress', 'Failed']],
];

/** The path of a request, chosen by a fraction in [0, 1). */
export function requestPath(r: number): readonly RequestStatus[] {
  let acc = 0;
  for (const [share, path] of PATHS) {
    acc += share;
    if (r < acc) return path;
  }
  return PATHS[0]![1];
}

export function statusOn(
  path: readonly RequestStatus[],
  createdDay: number,
  day: number,
): RequestStatus {
  const step = Math.max(0, Math.min(day - createdDay, path.length - 1));
  return path[step]!;
}

/** The day the request reached its final state. */
export function finalDay(path: readonly RequestStatus[], createdDay: number): number {
  return createdDay + path.length - 1;
}

export function isPending(status: RequestStatus): boolean {
  return status === 'Created' || status === 'In Progress' || status === 'Retry In Progress';
}
