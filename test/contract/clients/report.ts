/**
 * What each client program reports after running against a live instance: the answers it
 * read, as its generated types gave them. Shared by the three programs beside this file.
 */
export interface ClientReport {
  /** `editions` of an `edition=auto` answer, read after narrowing it to EditionsStatus. */
  autoEditions: string[];
  /** `java.online` of that answer. */
  autoJavaOnline: boolean;
  /** A plain status, narrowed to ServerStatus: its `online` and `query.port`. */
  plainOnline: boolean;
  plainPort: number;
  /** The 429 of an image route, read as the typed ErrorResponse. */
  imageError: { status: number; error: string; message: string; retryAfter: string | null };
  /** A bulk answer: per entry, which schema narrowing picked. */
  bulkKinds: string[];
}

export interface ClientTarget {
  /** The API's base URL (`http://127.0.0.1:<port>/api/v1`). */
  base: string;
  /** A Java server's address (`127.0.0.1:<port>`), which also has a Bedrock server on the same port. */
  server: string;
  /** Headers that make each request its own client (X-Forwarded-For), so limits are per program. */
  client: Record<string, string>;
  /** Requests of the media tier a client may make in a minute. */
  mediaLimit: number;
}

/** True when T is `any`: a program assigns `false` to it, so `any` fails the compilation. */
export type IsAny<T> = 0 extends 1 & T ? true : false;
