import { describe, expect, it } from 'vitest';
import { deepLinkFromArgv, deepLinkRoute, isAppUrl, mintToken, validateExternalUrl, windowOptions } from '../../desktop/policy.js';

describe('desktop window policy', () => {
  it('runs the page isolated: context isolation, sandbox, no node integration, no webviews', () => {
    const options = windowOptions('/app/preload.cjs');
    expect(options.webPreferences).toMatchObject({
      preload: '/app/preload.cjs',
      contextIsolation: true,
      sandbox: true,
      nodeIntegration: false,
      nodeIntegrationInWorker: false,
      nodeIntegrationInSubFrames: false,
      webSecurity: true,
      allowRunningInsecureContent: false,
      webviewTag: false,
      navigateOnDragDrop: false,
    });
    expect(options.show).toBe(false);
  });

  it('treats only the server origin as the app', () => {
    const origin = 'http://127.0.0.1:8787';
    expect(isAppUrl('http://127.0.0.1:8787/ui/#/studio', origin)).toBe(true);
    expect(isAppUrl('http://127.0.0.1:8788/ui/', origin)).toBe(false);
    expect(isAppUrl('http://localhost:8787/ui/', origin)).toBe(false);
    expect(isAppUrl('https://127.0.0.1:8787/ui/', origin)).toBe(false);
    expect(isAppUrl('file:///etc/passwd', origin)).toBe(false);
    expect(isAppUrl('not a url', origin)).toBe(false);
    expect(isAppUrl(null, origin)).toBe(false);
  });

  it('lets only http(s) and mailto links without credentials go to the system browser', () => {
    expect(validateExternalUrl('https://example.com/docs?a=1')).toBe('https://example.com/docs?a=1');
    expect(validateExternalUrl('http://example.com')).toBe('http://example.com/');
    expect(validateExternalUrl('mailto:ada@example.com')).toBe('mailto:ada@example.com');
    for (const bad of [
      'file:///etc/passwd',
      'javascript:alert(1)',
      'smb://server/share',
      'vscode://file/x',
      'https://user:pass@example.com/',
      'https://',
      `https://example.com/${'a'.repeat(3000)}`,
      42,
      undefined,
    ]) {
      expect(validateExternalUrl(bad), String(bad).slice(0, 40)).toBeUndefined();
    }
  });

  it('maps hangar:// deep links onto UI routes and refuses anything else', () => {
    expect(deepLinkRoute('hangar://studio/echo')).toBe('#/studio/echo');
    expect(deepLinkRoute('hangar://status')).toBe('#/status');
    expect(deepLinkRoute('hangar:studio/echo')).toBe('#/studio/echo');
    expect(deepLinkRoute('hangar://settings')).toBeUndefined();
    expect(deepLinkRoute('hangar://studio/<script>')).toBeUndefined();
    expect(deepLinkRoute('hangar://studio/a/b/c')).toBeUndefined();
    expect(deepLinkRoute('https://studio/echo')).toBeUndefined();
    expect(deepLinkFromArgv(['/usr/bin/electron', '.', '--no-sandbox', 'hangar://studio/echo'])).toBe('#/studio/echo');
    expect(deepLinkFromArgv(['/usr/bin/electron', '.'])).toBeUndefined();
  });

  it('mints a different unguessable token each launch', () => {
    const a = mintToken();
    expect(a).toMatch(/^[0-9a-f]{64}$/);
    expect(mintToken()).not.toBe(a);
  });
});
