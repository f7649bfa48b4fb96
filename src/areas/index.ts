// Every area of the API, in the order their routes are registered (and their operations listed in
// the OpenAPI document). app.ts and context.ts loop over this list (areas/area.ts).
import type { Area } from './area.js';
import { systemArea } from './system/index.js';
import { keysArea } from './keys/index.js';
import { auditArea } from './audit/index.js';
import { usageArea } from './usage/index.js';
import { resourcesArea } from './resources/index.js';
import { eventsArea } from './events/index.js';
import { batchArea } from './batch/index.js';
import { historyArea } from './history/index.js';
import { integrationsArea } from './integrations/index.js';
import { webhooksArea } from './webhooks/index.js';
import { appsArea } from './apps/index.js';
import { oauthArea } from './oauth/index.js';
import { developerArea } from './developer/index.js';
import { schedulesArea } from './schedules/index.js';
import { installationsArea } from './installations/index.js';
import { consoleArea } from './console/index.js';

export const AREAS: readonly Area[] = [
  systemArea,
  keysArea,
  auditArea,
  usageArea,
  resourcesArea,
  historyArea,
  eventsArea,
  batchArea,
  integrationsArea,
  webhooksArea,
  appsArea,
  oauthArea,
  developerArea,
  schedulesArea,
  installationsArea,
  consoleArea,
];
