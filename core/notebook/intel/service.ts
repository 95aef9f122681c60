/**
 * The data-intelligence services of one server, built on its notebook sessions: smart preprocessing
 * and algorithm match, saved patterns, the 13 tools and scheduled runs. The subsystem provides them
 * as `notebookIntel`.
 */
import type { Store } from '../../kernel/store.js';
import type { NotebookService } from '../service.js';
import { PatternService } from './patterns.js';
import { DataIntelligence } from './prep-and-match.js';
import { ScheduleService, type ScheduleTeam } from './scheduler.js';
import { NotebookTools } from './tools.js';

export interface NotebookIntel {
  intelligence: DataIntelligence;
  patterns: PatternService;
  tools: NotebookTools;
  schedules: ScheduleService;
}

export function createNotebookIntel(store: Store, notebooks: NotebookService, version: string, team?: ScheduleTeam): NotebookIntel {
  const intelligence = new DataIntelligence(notebooks);
  return {
    intelligence,
    patterns: new PatternService(store, notebooks),
    tools: new NotebookTools(notebooks, intelligence, version),
    schedules: new ScheduleService(store, notebooks, team ? { team } : {}),
  };
}
