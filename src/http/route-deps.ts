// What every route plugin receives from buildApp: its own module, so that the routes do not import the app that
// registers them.
import type { Config } from '../config/schema.js';
import type { Services } from '../services.js';

export interface RouteDeps {
  config: Config;
  services: Services;
}
