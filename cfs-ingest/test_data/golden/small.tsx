import React from "react";

type Props = { name: string };

/** Greets. */
export function Hello({ name }: Props) {
  return <div className="hello">Hello, {name}!</div>;
}

export const List = ({ items }: { items: string[] }) => (
  <ul>
    {items.map((i) => (
      <li key={i}>{i}</li>
    ))}
  </ul>
);
