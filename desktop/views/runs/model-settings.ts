/// <reference lib="dom" />
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import type { ModelConnectionTest, ModelSettingsView } from '../../../core/coderun/schemas.js';
import { getJson, postJson } from '../api.js';
import { describeFailure } from '../drop-ins.js';

/**
 * The model endpoint every agent and coding run talks to, as the server has it (never the key:
 * only whether one is set, and from which variable), with "Test connection": one real request to
 * the endpoint, and what it found in words.
 */

const KEY_TEXT: Record<ModelSettingsView['api_key'], string> = {
  none: 'not set (local servers such as Ollama need none)',
  literal: 'set in the configuration',
  environment: 'set from the environment',
};

export function ModelSettings() {
  const [settings, setSettings] = useState<ModelSettingsView | null>(null);
  const [result, setResult] = useState<ModelConnectionTest | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    getJson<ModelSettingsView>('/api/config/model').then(setSettings, (err: unknown) => setError(describeFailure(err)));
  }, []);
  const test = async () => {
    setBusy(true);
    setResult(null);
    try {
      setResult(await postJson<ModelConnectionTest>('/api/config/model/test', {}));
      setError(null);
    } catch (err) {
      setError(describeFailure(err));
    } finally {
      setBusy(false);
    }
  };
  return html`<section class="card model-panel" aria-labelledby="model-title" data-testid="model-settings">
    <h2 id="model-title">Model</h2>
    ${
      settings
        ? html`<dl class="facts">
          <dt>Endpoint</dt><dd class="mono" data-testid="model-endpoint">${settings.base_url ?? html`<span class="bad">not configured</span> <small class="muted">(model.baseUrl, or HANGAR_MODEL__BASE_URL)</small>`}</dd>
          <dt>Model</dt><dd class="mono">${settings.model}</dd>
          <dt>API key</dt><dd data-testid="model-key">${KEY_TEXT[settings.api_key]}${settings.api_key_variable && html` (<code>${settings.api_key_variable}</code>)`}</dd>
          <dt>Timeout</dt><dd>${settings.timeout_ms} ms, ${settings.retries} ${settings.retries === 1 ? 'retry' : 'retries'}</dd>
        </dl>`
        : !error && html`<p class="muted">Loading…</p>`
    }
    <p class="muted">Set these under "model" in hangar.config.json (or HANGAR_MODEL__* variables) and restart.</p>
    <div class="actions"><button class="primary" onClick=${test} disabled=${busy}>${busy ? 'Testing…' : 'Test connection'}</button></div>
    ${
      result &&
      (result.ok
        ? html`<p class="notice" role="status" data-testid="model-test">Connected: ${result.model} answered in ${result.duration_ms} ms${result.reply ? html` (“${result.reply}”)` : ''}.</p>`
        : html`<p class="alert" role="alert" data-testid="model-test">Connection failed: ${result.error}</p>`)
    }
    ${error && html`<p class="alert" role="alert">${error}</p>`}
  </section>`;
}
