import { type AnyRoute, defineRoute } from '../http/route.js';
import type { Store } from '../kernel/store.js';
import { StorageStats } from './schemas.js';

export function storageRoutes(store: Store): AnyRoute[] {
  return [
    defineRoute({
      method: 'GET',
      url: '/api/v1/storage/stats',
      summary: 'Storage backend statistics: files, records per collection, bytes',
      tags: ['platform'],
      schema: { response: { 200: StorageStats } },
      handler: () => store.stats(),
    }),
  ];
}
