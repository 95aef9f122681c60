import { v7 } from 'uuid';

/**
 * A UUIDv7: its text sorts in creation order, even between records made in the same millisecond,
 * because uuid keeps a monotonic counter within the process. Lists that show "newest first" break
 * ties between equal `created_at` values by this id, so their order never depends on chance.
 */
export function timeOrderedId(): string {
  return v7();
}
