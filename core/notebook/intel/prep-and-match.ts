/**
 * Smart preprocessing and algorithm match as the routes call them: both run inside the kernel of
 * the notebook holding the variable (see `inspect.ts`), so the data never leaves its thread.
 */
import type { NotebookService } from '../service.js';
import { callOnVariable } from './inspect.js';
import type { AlgorithmMatchResult } from './worker/algomatch.js';
import type { SmartPrepResult } from './worker/smartprep.js';
import type { Rule, ValidationResult } from './worker/validate.js';

export type { AlgorithmMatchResult, SmartPrepResult, ValidationResult };

export class DataIntelligence {
  constructor(private readonly notebooks: NotebookService) {}

  smartprep(input: { variable: string; target?: string; notebook?: string }): Promise<SmartPrepResult> {
    return callOnVariable(this.notebooks, {
      notebook: input.notebook,
      name: input.variable,
      fn: 'smartprepCall',
      args: { variable: input.variable, target: input.target },
    });
  }

  algorithmMatch(input: { variable: string; target?: string; notebook?: string; budget_ms?: number }): Promise<AlgorithmMatchResult> {
    return callOnVariable(this.notebooks, {
      notebook: input.notebook,
      name: input.variable,
      fn: 'algorithmMatchCall',
      args: { variable: input.variable, target: input.target, budget_ms: input.budget_ms },
    });
  }

  validate(input: { notebook: string; variable: string; rules: Rule[] }): Promise<ValidationResult> {
    return callOnVariable(this.notebooks, {
      notebook: input.notebook,
      name: input.variable,
      fn: 'validateCall',
      args: { variable: input.variable, rules: input.rules },
    });
  }
}
