/**
 * The model settings' routes: what the model endpoint is (never its key) and a "test connection"
 * that makes one real request to it. Under `/api/config`, so the session token guards them as it
 * guards the rest of the coding-run configuration they sit beside in the Runs view.
 */
import { type AnyRoute, defineRoute } from '../http/route.js';
import type { EndpointSettings } from './model.js';
import { modelSettingsView, testModelConnection } from './model-check.js';
import { ModelConnectionTest, ModelSettingsView } from './schemas.js';

const tags = ['coding runs'];

/** @param endpoint read per request, so the answer is the server's current setting. */
export function modelRoutes(endpoint: () => EndpointSettings): AnyRoute[] {
  return [
    defineRoute({
      method: 'GET',
      url: '/api/config/model',
      summary: 'The model endpoint: URL, model, timeout, and whether an API key is set (never the key)',
      tags,
      schema: { response: { 200: { description: 'The model settings', schema: ModelSettingsView } } },
      handler: () => modelSettingsView(endpoint()),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/config/model/test',
      summary: 'Test the connection: one real chat completion against the model endpoint; a failure is `ok: false` with the error in words',
      tags,
      schema: { response: { 200: { description: 'What the request found', schema: ModelConnectionTest } } },
      handler: () => testModelConnection(endpoint()),
    }),
  ];
}
