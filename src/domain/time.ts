export const DAY_MS = 24 * 3600 * 1000;

/** UNIX seconds of a date (whole seconds, truncated), as both doors show times. */
export const unixSeconds = (date: Date) => Math.floor(date.getTime() / 1000);
