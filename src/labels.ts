/**
 * The namespace label that opts a namespace in: the webhook registration
 * selects on it, `check` reads it, the flags' help names it. A module of its
 * own so that the flag tables, which every command loads, can name it without
 * loading check/.
 */
export const INJECTION_LABEL = 'leaderhook.io/injection';
