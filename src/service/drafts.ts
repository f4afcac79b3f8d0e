import type { Config } from '../config/config.ts';
import type { ModelRegistry } from '../embedding/registry.ts';
import type { Storage } from '../storage/api.ts';

/**
 * Hands each loaded model's draft (an int8 copy, checked like the model) to storage, so that
 * text searches start their candidate walks while the model computes the exact vector
 * (SearchQuery.draft). Nothing happens when VSS_SEARCH_DRAFT is false, the backend has no use
 * for drafts, or a model folder has none. `log` hears whether each draft is in use.
 */
export function offerSearchDrafts(
  config: Pick<Config, 'searchDraft'>,
  models: ModelRegistry,
  storage: Storage,
  log: (level: 'info' | 'warn', msg: string, fields: Record<string, unknown>) => void,
): void {
  if (!config.searchDraft || !storage.addDraftEncoder) return;
  const add = storage.addDraftEncoder.bind(storage);
  models.whenLoaded((m) => {
    if (m.draftFile === undefined) return;
    add(m.name, m.draftFile, m.dimension, m.inputIds('a draft of the query'), (error) => {
      if (error === null) log('info', 'text searches start from the draft model', { model: m.name, draft: m.draftFile });
      else log('warn', 'the draft model cannot be used: text searches wait for the model', { model: m.name, draft: m.draftFile, error });
    });
  });
}
