package org.example.store

import java.util.ArrayDeque

/** A bounded queue of pending writes. */
class WriteQueue<T>(private val limit: Int = LIMIT) : Iterable<T> {
    private val items = ArrayDeque<T>()

    val count: Int
        get() = items.size

    constructor() : this(LIMIT)

    /** Adds a write, refusing it when the queue is full. */
    fun offer(item: T): Boolean {
        if (items.size >= limit) return false
        return items.add(item)
    }

    override fun iterator(): Iterator<T> = items.iterator()

    companion object {
        const val LIMIT = 1024
    }
}

interface Sink<T> {
    fun write(item: T)
}

enum class State {
    OPEN,
    CLOSED;

    fun accepts() = this == OPEN
}

data class Span(val start: Int, val end: Int)

typealias Writes = List<Span>

fun emptyQueue(): WriteQueue<Span> = WriteQueue()
