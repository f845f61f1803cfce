import { notImplementedYet } from './placeholder.js';

export const sendInvitations = notImplementedYet;
