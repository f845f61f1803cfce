export const DAY_MS = 24 * 3600 * 1000;

/** UNIX seconds of a date (whole seconds, truncated), as both doors show times. */
export const unixSeconds = (date: Date) => unixSecondsOfMs(date.getTime());

/** UNIX seconds of epoch milliseconds (as SQL reads times, exact to the millisecond). */
export const unixSecondsOfMs = (ms: number) => Math.floor(ms / 1000);
