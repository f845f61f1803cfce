import { notImplementedYet } from './placeholder.js';

export const getOwnUser = notImplementedYet;
