/**
 * A failure leaderhook expects and explains: a certificate it cannot read, a
 * port in use, an API server it cannot speak to. The message names what
 * failed and why, so the CLI prints it alone on one line; any other error
 * that reaches the CLI is a bug, and is printed with its stack.
 */
export class UserFacingError extends Error {}
