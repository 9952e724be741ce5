/**
 * What a request can read: overloads the grammar cannot separate (call signatures
 * with type parameters on successive lines leave an ERROR in the interface).
 */
export interface Get<E> {
  <K extends keyof E>(key: K): E[K]
  <K extends string>(key: K): unknown
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
