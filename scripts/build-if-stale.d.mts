/** Whether some src/**\/*.ts has no dist/**\/*.js, or one older than itself. */
export function serviceBuildIsStale(): boolean;
/** Builds dist/ (tsc) when it is stale; whether it built. */
export function buildServiceIfStale(): boolean;
