/** UNIX seconds of a date (whole seconds, truncated), as both doors show times. */
export const unixSeconds = (date: Date) => Math.floor(date.getTime() / 1000);
