/// <reference lib="dom" />
import { useEffect, useState } from 'preact/hooks';

/**
 * Light and dark themes: by default the system's (`prefers-color-scheme`), or the one the person
 * picked, remembered in localStorage. The choice sets `data-theme` on <html>; styles.css holds
 * both palettes as custom properties.
 */
export type ThemeChoice = 'system' | 'light' | 'dark';
const KEY = 'hangar.theme';

function apply(choice: ThemeChoice): void {
  const dark = choice === 'dark' || (choice === 'system' && matchMedia('(prefers-color-scheme: dark)').matches);
  document.documentElement.dataset.theme = dark ? 'dark' : 'light';
}

export function useTheme(): [ThemeChoice, (choice: ThemeChoice) => void] {
  const [choice, setChoice] = useState<ThemeChoice>(() => (localStorage.getItem(KEY) as ThemeChoice | null) ?? 'system');
  useEffect(() => {
    apply(choice);
    localStorage.setItem(KEY, choice);
    const media = matchMedia('(prefers-color-scheme: dark)');
    const follow = () => apply(choice);
    media.addEventListener('change', follow);
    return () => media.removeEventListener('change', follow);
  }, [choice]);
  return [choice, setChoice];
}
