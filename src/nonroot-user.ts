/**
 * The user and group leaderhook's image runs as (the Dockerfile's USER,
 * distroless's nonroot). The injected hook runs as it, and `check`'s probe pod
 * too, so the probe meets Pod Security "restricted" as the hook does.
 */
export const NONROOT_UID = 65532;
