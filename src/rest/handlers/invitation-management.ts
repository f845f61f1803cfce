import { notImplementedYet } from './placeholder.js';

export const listInvitations = notImplementedYet;
export const resendInvitation = notImplementedYet;
export const revokeInvitation = notImplementedYet;
