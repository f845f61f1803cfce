import { notImplementedYet } from './placeholder.js';

export const listAttachments = notImplementedYet;
export const deleteAttachment = notImplementedYet;
