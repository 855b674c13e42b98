import { renderBestPracticesSpec, renderScoreSpec } from '../../documents/spec.renderer.js';
import { BEST_PRACTICES } from './best-practices.js';
import {
  COMPONENTS,
  DECIMALS,
  DIMENSION_WEIGHTS,
  FRESHNESS_HALF_LIFE_DAYS,
  HEALTH_MULTIPLIER,
  HEALTH_RULES,
  HEALTH_SCORE,
  SCORE_VERSION,
  WILSON_Z,
  WINDOW_DAYS,
} from './methodology.js';

/** /spec/market-score-v1.json, rendered from the constants the scorer computes with. */
export const scoreSpec = (baseUrl: string) =>
  renderScoreSpec(baseUrl, {
    version: SCORE_VERSION,
    weights: DIMENSION_WEIGHTS,
    components: COMPONENTS,
    healthRules: HEALTH_RULES,
    healthMultiplier: HEALTH_MULTIPLIER,
    healthScore: HEALTH_SCORE,
    freshnessHalfLifeDays: FRESHNESS_HALF_LIFE_DAYS,
    wilsonZ: WILSON_Z,
    windowDays: WINDOW_DAYS,
    decimals: DECIMALS,
  });

/** /spec/best-practices-v1.json, rendered from the items the checklist evaluates. */
export const bestPracticesSpec = (baseUrl: string) => renderBestPracticesSpec(baseUrl, BEST_PRACTICES);
