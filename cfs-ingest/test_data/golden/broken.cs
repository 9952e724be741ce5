namespace Shop.Orders
{
    /// <summary>An order line: a product and how many.</summary>
    public class Line : IEquatable<Line>
#if HAVE_COMPARER
        , IComparable<Line>
#endif
    {
        public string Product { get; }

        public int Count { get; }

        /// <summary>Lines of the same product and count are equal.</summary>
        public bool Equals(Line other) => other.Product == Product && other.Count == Count;
    }
}
