/**
 * A router's `get`: generic overloads, each on lines of its own, separated by line
 * breaks alone.
 */
export interface Get<Env, Base extends string> {
  // get(handler)
  <
    Path extends string = Base,
    Input = unknown,
  >(
    handler: Handler<Env, Path, Input>
  ): Router<
    Env,
    Path
  >

  // get(path, handler)
  <Path extends string, Input = unknown>(
    path: Path,
    handler: Handler<Env, Path, Input>
  ): Router<Env, Path>
}

/** A request's handler. */
export type Handler<Env, Path extends string, Input> = (
  env: Env,
  path: Path,
  input: Input
) => Response

/** Routes requests to handlers. */
export class Router<Env, Path extends string> {
  constructor(readonly env: Env, readonly path: Path) {}
}

/** Joins two paths with one slash. */
export function join(a: string, b: string): string {
  return `${a.replace(/\/$/, '')}/${b.replace(/^\//, '')}`
}
