/// <reference lib="dom" />
import { html, render } from 'htm/preact';
import { redeemLoginLink } from './api.js';
import { App } from './app.js';

// Started before the first render: every API call waits for the login link's exchange.
void redeemLoginLink();

render(html`<${App} />`, document.getElementById('app')!);
