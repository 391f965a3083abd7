/**
 * Requests being answered right now, whichever entrance answers them: the memory release
 * (src/core/memory-release.ts) asks for no collection while one is in flight.
 */
import type { ServerResponse } from 'node:http';

export class RequestsInFlight {
  private count = 0;
  /** One listener for every response: nothing is allocated per request. */
  private readonly ended = () => {
    this.count -= 1;
  };

  /** Counts a request until its response closes (answered or cut short). */
  track(res: ServerResponse): void {
    this.count += 1;
    // A response closes once; `on` spares the wrapper `once` would allocate per request.
    res.on('close', this.ended);
  }

  get active(): number {
    return this.count;
  }
}
