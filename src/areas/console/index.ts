import type { Area } from '../area.js';
import { consoleDirectory } from '../../paths.js';
import { consoleRoutes } from './routes.js';

export const consoleArea: Area = {
  name: 'console',
  async registerRoutes(app) {
    await app.register(consoleRoutes, { directory: consoleDirectory() });
  },
};
