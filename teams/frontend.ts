import { defineTeam } from 'hangar';

/** The user interface: pages, components and styles (an example of a team written in TypeScript). */
export default defineTeam({
  charter: 'User interface: pages, components, styles and their tests.',
  owns: ['src/web/**', 'web/**', 'src/components/**', 'src/pages/**', 'public/**', 'styles/**', 'test/web/**'],
  acceptance: 'npm test',
  agents: [
    { name: 'frontend-developer', role: 'developer' },
    { name: 'ts-corrector', role: 'corrector', languages: ['ts', 'tsx', 'js', 'jsx', 'css'] },
  ],
  skills: ['html', 'css', 'accessibility'],
  seats: { reviewer: 'frontend-reviewer', tester: 'frontend-tester' },
  match: {
    keywords: ['page', 'button', 'form', 'ui', 'component', 'style', 'css', 'layout'],
    extensions: ['tsx', 'jsx', 'css', 'html'],
  },
});
