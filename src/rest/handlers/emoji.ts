import { notImplementedYet } from './placeholder.js';

export const deactivateEmoji = notImplementedYet;
export const listEmoji = notImplementedYet;
