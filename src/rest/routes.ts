// The /api/v1 routes this server answers, in the reference's shapes.
import type { RestRoute } from './dispatch.js';

export const restRoutes: RestRoute[] = [];
