// Loaded with `node --import`: records the URL of every module the process resolves, one a line, in
// the file LOADED_MODULES_FILE names (record-modules-hooks.mjs runs on the loader's thread).
import { register } from 'node:module';

register('./record-modules-hooks.mjs', import.meta.url, { data: { file: process.env.LOADED_MODULES_FILE } });
