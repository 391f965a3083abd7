/**
 * What a probe needs of a signal: whether it has fired, why, and one-shot listeners. An
 * AbortSignal is one; so is a Deadline.
 */
export interface AbortLike {
  readonly aborted: boolean;
  readonly reason: unknown;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

/**
 * A query's own abort signal: fires once, at the deadline or when the caller ends it. Every
 * listener is called at most once (as with `{ once: true }`). A look-up that pings creates
 * one; an AbortController would do, but it is an EventTarget, whose creation and listeners
 * cost several times as much as this list of callbacks.
 */
export class Deadline implements AbortLike {
  aborted = false;
  reason: unknown = undefined;
  private listeners: Array<() => void> | null = null;

  addEventListener(_type: 'abort', listener: () => void): void {
    if (this.aborted) return;
    (this.listeners ??= []).push(listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const listeners = this.listeners;
    if (listeners === null) return;
    const index = listeners.indexOf(listener);
    if (index >= 0) listeners.splice(index, 1);
  }

  /** Whether anything still waits for the abort. */
  get listened(): boolean {
    return this.listeners !== null && this.listeners.length > 0;
  }

  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    const listeners = this.listeners;
    this.listeners = null;
    if (listeners === null) return;
    for (const listener of listeners) {
      try {
        listener();
      } catch (error) {
        // As an EventTarget does: the others still run, and the error is thrown on its own.
        queueMicrotask(() => {
          throw error;
        });
      }
    }
  }
}
