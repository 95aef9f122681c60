/// <reference lib="dom" />
import { html, render } from 'htm/preact';
import { App } from './app.js';

render(html`<${App} />`, document.getElementById('app')!);
