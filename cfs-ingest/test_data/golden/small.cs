using System;
using System.Collections.Generic;

namespace Example.Store;

/// <summary>A bounded queue of pending writes.</summary>
public sealed class WriteQueue<T>
{
    public const int Limit = 1024;

    private readonly List<T> _items = new();

    public int Count => _items.Count;

    public WriteQueue() { }

    /// <summary>Adds a write, refusing it when the queue is full.</summary>
    public bool Offer(T item)
    {
        if (_items.Count >= Limit)
        {
            return false;
        }
        _items.Add(item);
        return true;
    }

    public event EventHandler? Drained;
}

public interface ISink<T>
{
    void Write(T item);
}

public record Span(int Start, int End);

public enum State { Open, Closed }

public delegate void Flushed(int count);
