/**
 * Who decides the fate of a request that is running when its worker is stopped (a missed
 * deadline): the worker, if it began to commit first, and the request is answered; otherwise
 * the main thread, and the request's transaction is rolled back, never committed. One Int32 in
 * a SharedArrayBuffer both threads change atomically:
 *  - 0: nothing has begun to commit since the worker started;
 *  - n > 0: the request tagged n began to commit (its answer comes even if the worker is stopped);
 *  - STOPPED: the main thread stopped the worker: it commits nothing more and closes.
 * The worker's side is called by its one transaction runner (transaction.ts), before each COMMIT.
 */

const STOPPED = -1;
/** The code of a request's failure because its worker was stopped. */
export const STOPPED_CODE = 'SQLITE_WORKER_STOPPED';

export type CommitGate = Int32Array;

export function newCommitGate(): CommitGate {
  return new Int32Array(new SharedArrayBuffer(4));
}

/** A request's tag in the gate: positive, and distinct among the requests one worker has in flight. */
export function requestTag(id: number): number {
  return (id % 0x3fffffff) + 1;
}

/** The worker's side, before a commit: claims it for request `tag`, or throws once stopped. */
export function beginCommit(gate: CommitGate, tag: number): void {
  for (;;) {
    const seen = Atomics.load(gate, 0);
    if (seen === STOPPED) throw stoppedBeforeCommit();
    if (Atomics.compareExchange(gate, 0, seen, tag) === seen) return;
  }
}

/** What a commit refused by the gate throws: the main thread answers it as SqliteWorkerStoppedError. */
function stoppedBeforeCommit(): Error {
  const error = new Error('the SQLite worker was stopped before this commit: the transaction was rolled back');
  return Object.assign(error, { code: STOPPED_CODE });
}

export function isStopped(gate: CommitGate): boolean {
  return Atomics.load(gate, 0) === STOPPED;
}

/** The main thread's side: stops the worker; returns the tag of the request that began to commit, or 0. */
export function stopGate(gate: CommitGate): number {
  const seen = Atomics.exchange(gate, 0, STOPPED);
  return seen > 0 ? seen : 0;
}
