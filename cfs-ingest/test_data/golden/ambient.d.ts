// Declarations of a library without its code, as a `.d.ts` file holds them.

/** Greets someone by name. */
declare function greet(name: string): string;

/** Holds a greeting. */
declare class Greeter {
  constructor(greeting: string);
  greet(): string;
}

declare const version: string;

/** The client's wire types. */
export declare namespace Wire {
  /** One request as sent. */
  export interface Request {
    url: string;
    body?: Uint8Array;
  }

  export type Method = "GET" | "POST";

  export function encode(request: Request): Uint8Array;
}

declare module "http-server" {
  /** The user a middleware found. */
  interface IncomingMessage {
    user?: string;
  }
}

declare global {
  interface Window {
    wire: typeof Wire;
  }
}

namespace Retry {
  /** Doubles the delay after each attempt. */
  export function backoff(attempt: number): number {
    return 100 * 2 ** attempt;
  }

  export class Policy {
    constructor(readonly attempts: number) {}
  }
}
