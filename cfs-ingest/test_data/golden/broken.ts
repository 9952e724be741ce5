/**
 * A value read and written: variance annotations (`in out`, TypeScript 4.7) that the
 * grammar cannot read leave an ERROR in the interface.
 */
export interface Cell<in out T> {
  get(): T
  set(value: T): void
}

/** Keys read so far. */
export class Reads {
  private seen = new Set<string>()

  /** Remembers a key. */
  note(key: string): void {
    this.seen.add(key)
  }
}

/** How many keys were read. */
export function count(reads: Reads): number {
  return reads['seen'].size
}
