package org.example.store;

import java.util.ArrayList;
import java.util.List;

/**
 * A bounded queue of pending writes.
 */
public final class WriteQueue<T> implements Iterable<T> {
    /** The most writes held at once. */
    public static final int LIMIT = 1024;

    private final List<T> items = new ArrayList<>();

    public WriteQueue() {}

    /** Adds a write, refusing it when the queue is full. */
    @SuppressWarnings("unchecked")
    public boolean offer(T item) {
        if (items.size() >= LIMIT) {
            return false;
        }
        return items.add(item);
    }

    @Override
    public java.util.Iterator<T> iterator() {
        return items.iterator();
    }

    enum State {
        OPEN, CLOSED;

        boolean accepts() {
            return this == OPEN;
        }
    }
}

interface Sink<T> {
    void write(T item);
}

record Span(int start, int end) {}
