import { x } from "./x";

/** An interface. */
export interface Shape {
  area(): number;
}

export type Id = string | number;

export enum Color {
  Red,
  Green,
}

export const double = (n: number): number => n * 2;

let counter = 0;

export abstract class Base implements Shape {
  abstract area(): number;
  describe(): string {
    return `area ${this.area()}`;
  }
}

export function make(id: Id): Base {
  return null as unknown as Base;
}

namespace Util {
  export const version = 1;
}

export default function () {
  return x;
}
