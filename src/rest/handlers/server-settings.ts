import { notImplementedYet } from './placeholder.js';

export const serverSettings = notImplementedYet;
