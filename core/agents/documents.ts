/**
 * Workspace documents: the records of a store collection read as documents an agent can retrieve
 * from (`ctx.documents(collection)` in an agent, GET /api/v1/documents/{collection}).
 */
import type { Store } from '../kernel/store.js';
import type { WorkspaceDocument } from './types.js';

const COLLECTION_NAME = /^[a-z0-9][a-z0-9_.-]*$/i;

/**
 * A collection's records as documents. Records missing a `content` string are skipped, so an
 * agent can point this at any collection without tripping over foreign records.
 */
export async function readDocuments(store: Store, collection: string): Promise<WorkspaceDocument[]> {
  if (!COLLECTION_NAME.test(collection)) throw new Error(`invalid collection name "${collection}"`);
  const records = await store.collection<Record<string, unknown>>(collection).entries();
  return records
    .filter(([, r]) => typeof r?.content === 'string')
    .map(([id, r]) => ({
      id: typeof r.id === 'string' ? r.id : id,
      title: typeof r.title === 'string' ? r.title : null,
      content: r.content as string,
      resource: typeof r.resource === 'string' ? r.resource : id,
      metadata: (r.metadata && typeof r.metadata === 'object' ? r.metadata : {}) as Record<string, unknown>,
    }))
    .sort((a, b) => a.id.localeCompare(b.id));
}
