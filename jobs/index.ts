import type { JobDefinition } from './job.js';
import { siteCardJob } from './site-card.job.js';
import { settlePaymentJob } from './settle-payment.job.js';
import { reconcilePaymentsJob } from './reconcile-payments.job.js';
import { postManifestJob } from './post-manifest.job.js';
import { agentDocumentsBatchJob, agentDocumentsJob, agentSimilarBatchJob } from './agent-documents.job.js';
import { populationStatsJob } from './population-stats.job.js';
import { recomputeAllDocumentsJob, recomputeAllJob } from './recompute-all.job.js';
import { skillsIndexJob } from './skills-index.job.js';
import { skillAuditAllJob, skillAuditJob } from './skill-audit.job.js';
import { webhookDeliveryJob } from './webhook-delivery.job.js';
import { webhookFanoutJob } from './webhook-fanout.job.js';
import { webhookPruneJob } from './webhook-prune.job.js';
import { webhookSweepJob } from './webhook-sweep.job.js';
import { agentAnalyticsJob } from './agent-analytics.job.js';

/** Every job the workers know, by name. */
export const JOBS: Record<string, JobDefinition> = Object.fromEntries(
  [
    siteCardJob,
    settlePaymentJob,
    reconcilePaymentsJob,
    postManifestJob,
    agentDocumentsJob,
    agentDocumentsBatchJob,
    agentSimilarBatchJob,
    populationStatsJob,
    recomputeAllJob,
    recomputeAllDocumentsJob,
    skillsIndexJob,
    skillAuditJob,
    skillAuditAllJob,
    webhookFanoutJob,
    webhookDeliveryJob,
    webhookPruneJob,
    webhookSweepJob,
    agentAnalyticsJob,
  ].map((job): [string, JobDefinition] => [job.name, job]),
);
