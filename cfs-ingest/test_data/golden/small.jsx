import React from 'react';

// A button.
export default function Button({ label, onClick }) {
  return <button onClick={onClick}>{label}</button>;
}

export const Panel = ({ children }) => <section>{children}</section>;
