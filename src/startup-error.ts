/** A start-up failure the user can fix: printed as one line, then the process exits with status 1. */
export class StartupError extends Error {}
