# Shapes toolkit, used only for parser probing
defmodule Geo.Shapes do
  @moduledoc """
  Helpers for simple shapes.
  """

  @timeout 5000
  @type point :: {number, number}

  defstruct name: nil, sides: 0

  defmodule Inner do
    @moduledoc false
    def hello, do: :hi
  end

  @doc "Counts down to zero."
  @spec countdown(integer) :: :done
  def countdown(0), do: :done
  def countdown(n) when is_integer(n) and n > 0 do
    countdown(n - 1)
  end

  @doc false
  def area(%{w: w, h: h}) do
    w * h
  end

  # private helper
  defp double(x), do: x * 2

  defmacro twice(expr) do
    quote do: unquote(expr) * 2
  end

  def timeout, do: @timeout
end

defprotocol Geo.Describe do
  @doc "Describe a value"
  def describe(value)
end

defimpl Geo.Describe, for: Geo.Shapes do
  def describe(shape), do: shape.name
end
