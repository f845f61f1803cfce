// The schema engine's thread (see applyMigrationsInWorker in migrations.ts): applies the pending
// migrations through connections of its own to `directUrl`, posts the names it applied, and ends.
import { parentPort, workerData } from 'node:worker_threads';
import { PrismaPg } from '@prisma/adapter-pg';
import { applyMigrationsAndDisconnect } from './migrations.js';

const { directUrl } = workerData as { directUrl: string };
parentPort!.postMessage(await applyMigrationsAndDisconnect(new PrismaPg({ connectionString: directUrl })));
