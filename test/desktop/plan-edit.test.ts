import { describe, expect, it } from 'vitest';
import { type PlanTask, planEdit, toDraft } from '../../desktop/views/runs/plan-edit.js';

const task = (id: string, over: Partial<PlanTask> = {}): PlanTask => ({
  id,
  title: `task ${id}`,
  description: '',
  role: 'developer',
  squad: 'api',
  acceptance: '',
  priority: 5,
  files: ['src/api/a.mjs'],
  dependencies: [],
  ...over,
});

describe('plan edit at the approval gate', () => {
  const tasks = [task('T1'), task('T2', { dependencies: ['T1'] })];

  it('sends nothing when no draft differs from the plan', () => {
    expect(planEdit(tasks.map(toDraft), tasks)).toBeNull();
  });

  it('sends only the fields that changed, as the PATCH takes them', () => {
    const drafts = tasks.map(toDraft);
    drafts[0] = { ...drafts[0]!, title: 'renamed', files: 'src/api/a.mjs,\n src/api/b.mjs , ', squad: '' };
    expect(planEdit(drafts, tasks)).toEqual({
      tasks: [{ id: 'T1', title: 'renamed', squad: null, files: ['src/api/a.mjs', 'src/api/b.mjs'] }],
    });
  });

  it('does not count a list retyped with other spacing as a change', () => {
    const drafts = tasks.map(toDraft);
    drafts[1] = { ...drafts[1]!, dependencies: ' T1 ,' };
    expect(planEdit(drafts, tasks)).toBeNull();
  });

  it('removes by id and adds a new task with all its fields', () => {
    const drafts = tasks.map(toDraft);
    drafts[1] = { ...drafts[1]!, remove: true };
    drafts.push({ ...toDraft(task('T3', { title: 'new one', dependencies: ['T1'] })), added: true });
    expect(planEdit(drafts, tasks)).toEqual({
      tasks: [
        { id: 'T2', remove: true },
        {
          id: 'T3',
          title: 'new one',
          description: '',
          role: 'developer',
          squad: 'api',
          priority: 5,
          files: ['src/api/a.mjs'],
          dependencies: ['T1'],
        },
      ],
    });
  });

  it('drops a task added and removed again before saving', () => {
    const drafts = [...tasks.map(toDraft), { ...toDraft(task('T3')), added: true, remove: true }];
    expect(planEdit(drafts, tasks)).toBeNull();
  });

  it('leaves a priority that is not a whole number as typed, for the server to refuse with its reason', () => {
    const drafts = tasks.map(toDraft);
    drafts[0] = { ...drafts[0]!, priority: 'high' };
    expect(planEdit(drafts, tasks)).toEqual({ tasks: [{ id: 'T1', priority: 'high' }] });
  });
});
