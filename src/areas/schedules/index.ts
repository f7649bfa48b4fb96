import { pluginRoutes, type Area } from '../area.js';
import { scheduleRoutes, schedulesCapability } from './routes.js';
import { scheduleSchemas } from './schemas.js';

export const schedulesArea: Area = {
  name: 'schedules',
  schemas: scheduleSchemas,
  capability: schedulesCapability,
  registerRoutes: pluginRoutes(scheduleRoutes, ({ services }) => ({ schedules: services.schedules })),
};
