import { pluginRoutes, type Area } from '../area.js';
import { consoleDirectory } from '../../paths.js';
import { consoleRoutes } from './routes.js';

export const consoleArea: Area = {
  name: 'console',
  registerRoutes: pluginRoutes(consoleRoutes, () => ({ directory: consoleDirectory() })),
};
